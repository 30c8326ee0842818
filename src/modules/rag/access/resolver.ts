import type { MaybePromise } from '../../../db/maybe-promise'
import { isQualifiedRef, type Need, parseReference, type ResourceKind, ResourceResolver } from '../../access/resolver'
import { runSteps, type Steps } from '../steps'
import type { CollectionRow } from '../store'
import type { Access, AccessStore, ParsedRef } from './store'

export type { Need } from '../../access/resolver'

/** Collection names (the contract's rule); a reference may be more (an id, `<owner email>/<name>`). */
export const COLLECTION_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** Collections as a kind of shared object (see ResourceResolver). */
export const COLLECTION_KIND: ResourceKind = {
  noun: 'collection',
  label: 'Collection',
  plural: 'collections',
  ambiguous: 'AMBIGUOUS_COLLECTION',
  names: COLLECTION_NAME,
  create: (name) => `POST /rag/collections {"name":"${name}"}, or uagent rag create ${name}`,
}

/** Whether a reference is `<owner email>/<name>`. */
export function isQualified(ref: string): boolean {
  return isQualifiedRef(ref, COLLECTION_NAME)
}

/** The forms a reference may be: a name, a public id (a UUID is also a valid name), `<owner email>/<name>`. */
export function parseRef(ref: string): ParsedRef {
  return parseReference(ref, COLLECTION_NAME)
}

/** A collection a reference names, and what the caller may do with it. */
export interface Resolved {
  collection: CollectionRow
  access: Access
}

/**
 * The one resolver (ResourceResolver, the rules every shared kind follows) for collections: a
 * collection reference (a `collection` in a body, `{name}` in a path, a CLI argument, an agent's,
 * an assistant's or a `rag:` model's collection) → the collection and the caller's access. Every
 * place that reads or writes a collection calls this and no other rule.
 */
export class CollectionResolver extends ResourceResolver<CollectionRow> {
  constructor(readonly store: AccessStore) {
    super(COLLECTION_KIND, store)
  }

  resolve(userId: string, ref: string, need: Need = 'viewer'): MaybePromise<Resolved> {
    return runSteps(this.steps(userId, ref, need))
  }

  *steps(userId: string, ref: string, need: Need = 'viewer'): Steps<Resolved> {
    const { row, access } = yield* this.rowSteps(userId, ref, need)
    return { collection: row, access }
  }

  /** The collection a reference names for the caller, or null (see ResourceResolver). */
  *find(userId: string, ref: string): Steps<Resolved | null> {
    const found = yield* this.findRow(userId, ref)
    return found && { collection: found.row, access: found.access }
  }
}
