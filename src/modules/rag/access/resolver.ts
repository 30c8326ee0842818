import { AppError, notFound } from '../../../core/errors'
import type { MaybePromise } from '../../../db/maybe-promise'
import { runSteps, type Steps, wait } from '../steps'
import type { CollectionRow } from '../store'
import { type Access, ACCESS_RANK, type AccessStore, type ParsedRef, type Reached } from './store'

/** Collection names (the contract's rule); a reference may be more (an id, `<owner email>/<name>`). */
export const COLLECTION_NAME = /^[A-Za-z0-9_-]{1,64}$/
const PUBLIC_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether a reference is `<owner email>/<name>`. */
export function isQualified(ref: string): boolean {
  const slash = ref.lastIndexOf('/')
  return slash > 0 && ref.slice(0, slash).includes('@') && COLLECTION_NAME.test(ref.slice(slash + 1))
}

/** A collection a reference names, and what the caller may do with it. */
export interface Resolved {
  collection: CollectionRow
  access: Access
}

/** What an operation needs: viewer (read), editor (write documents), manager (access, delete), owner. */
export type Need = Access

/**
 * The one resolver: a collection reference (a `collection` in a body, `{name}` in a path, a CLI
 * argument, an agent's or a `rag:` model's collection) → the collection and the caller's access,
 * in the contract's order:
 *
 * 1. the caller's own collection of that name;
 * 2. a collection `id` (its public UUID);
 * 3. `<owner email>/<name>`;
 * 4. the one collection of that name shared with the caller (two or more: 409 AMBIGUOUS_COLLECTION
 *    listing their qualified names).
 *
 * Access is the owner's, or the highest role any entry gives (the user, a group they are in,
 * everyone); admins manage every collection they name by id or `<owner email>/<name>`. Nothing
 * reached: 404, never a hint that it exists; reached with too little: 403. Read fresh from the
 * database on every call: a share, a member or a group removed counts from the next request, on
 * every replica. Every place that reads or writes a collection calls this and no other rule.
 */
export class CollectionResolver {
  constructor(readonly store: AccessStore) {}

  resolve(userId: string, ref: string, need: Need = 'viewer'): MaybePromise<Resolved> {
    return runSteps(this.steps(userId, ref, need))
  }

  *steps(userId: string, ref: string, need: Need = 'viewer'): Steps<Resolved> {
    const found = yield* this.find(userId, ref)
    if (!found) throw notFound(`Collection ${ref}`)
    if (ACCESS_RANK[found.access] >= ACCESS_RANK[need]) return found
    // Admins manage every collection (all but what only its owner is: none of the operations needs 'owner').
    if (need !== 'owner' && (yield* wait(this.store.isAdmin(userId)))) return { collection: found.collection, access: 'manager' }
    const owner = yield* wait(this.store.owner(found.collection.user_id))
    throw new AppError('FORBIDDEN', forbiddenMessage(ref, found.collection, `${owner?.email ?? found.collection.user_id}/${found.collection.name}`, found.access, need))
  }

  /** `<owner email>/<name>` of the collection a reference names (one name for it whichever way it was named: analytics labels). */
  qualifiedName(userId: string, ref: string): MaybePromise<string> {
    const store = this.store
    const resolved = this.steps(userId, ref)
    return runSteps(
      (function* () {
        const { collection } = yield* resolved
        const owner = yield* wait(store.owner(collection.user_id))
        return `${owner?.email ?? collection.user_id}/${collection.name}`
      })(),
    )
  }

  /** The collection a reference names for the caller, or null (see the class). */
  *find(userId: string, ref: string): Steps<Resolved | null> {
    const parsed = parseRef(ref)
    if (parsed.name === undefined && parsed.publicId === undefined && !parsed.owner) return null
    const found = yield* wait(this.store.candidates(userId, parsed))
    if (found.own) return { collection: found.own, access: 'owner' }
    for (const hit of [found.byId, found.byOwner]) {
      const reached = hit && (yield* this.reach(userId, hit))
      if (reached) return reached
    }
    const { shared } = found
    if (shared.length > 1) {
      const names = shared.map((row) => `${row.ownerEmail}/${row.collection.name}`)
      throw new AppError('AMBIGUOUS_COLLECTION', `Collection ${ref} is ambiguous: ${names.length} collections of that name are shared with you (${names.join(', ')}); name one as <owner email>/<name> or by id`)
    }
    return shared[0] ? { collection: shared[0].collection, access: shared[0].role } : null
  }

  /** The caller's access to a collection found by id or qualified name, or null when they have none. */
  private *reach(userId: string, { collection, role }: Reached): Steps<Resolved | null> {
    if (collection.user_id === userId) return { collection, access: 'owner' }
    if (role) return { collection, access: role }
    if (yield* wait(this.store.isAdmin(userId))) return { collection, access: 'manager' }
    return null
  }
}

/**
 * Why a reached collection refuses an operation, naming the collection the reference resolved to
 * (`<owner email>/<name>`): a bare name the caller has no collection of resolves to one shared with
 * them, so a write meant to make their own lands there; the message says how to make one instead.
 */
function forbiddenMessage(ref: string, collection: CollectionRow, qualified: string, access: Access, need: Need): string {
  const refused = `Your access to collection ${qualified} (${access}) does not allow this: it needs ${need}`
  if (ref !== collection.name) return `${refused}.`
  return (
    `${refused}. "${ref}" names ${qualified}, shared with you, because you have no collection of your own by that name: ` +
    `to make one, create it first (POST /rag/collections {"name":"${ref}"}, or uagent rag create ${ref}), then write to it.`
  )
}

/** The forms a reference may be: a name, a public id (a UUID is also a valid name), `<owner email>/<name>`. */
export function parseRef(ref: string): ParsedRef {
  const parsed: ParsedRef = {}
  if (COLLECTION_NAME.test(ref)) parsed.name = ref
  if (PUBLIC_ID.test(ref)) parsed.publicId = ref.toLowerCase()
  if (isQualified(ref)) {
    const slash = ref.lastIndexOf('/')
    parsed.owner = { email: ref.slice(0, slash).trim().toLowerCase(), name: ref.slice(slash + 1) }
  }
  return parsed
}
