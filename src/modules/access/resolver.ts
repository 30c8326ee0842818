import { AppError, type ErrorCode, notFound } from '../../core/errors'
import type { MaybePromise } from '../../db/maybe-promise'
import { runSteps, type Steps, wait } from '../rag/steps'
import { type Access, ACCESS_RANK } from './roles'
import type { OwnedRow, ParsedRef, Reached, ResourceLookup } from './store'

const PUBLIC_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * A kind of object shared through access lists: its noun in messages and audit actions, its
 * 409 code, and the rule its names follow (a reference may be more: an id, `<owner email>/<name>`).
 */
export interface ResourceKind {
  /** `collection`, `assistant`: messages, and the audit action `<noun>.access_changed`. */
  noun: string
  /** The same, capitalized, as messages begin with it. */
  label: string
  plural: string
  ambiguous: ErrorCode
  names: RegExp
  /** How to make one's own (an API call and its CLI command) for a name: said when a bare name reached someone else's and a write was refused. */
  create?: (name: string) => string
}

/** An object a reference names, and what the caller may do with it. */
export interface ResolvedRow<Row> {
  row: Row
  access: Access
}

/** What an operation needs: viewer (use, read), editor (change), manager (access, delete), owner. */
export type Need = Access

/** Whether a reference is `<owner email>/<name>` for names of this rule. */
export function isQualifiedRef(ref: string, names: RegExp): boolean {
  const slash = ref.lastIndexOf('/')
  return slash > 0 && ref.slice(0, slash).includes('@') && names.test(ref.slice(slash + 1))
}

/** The forms a reference may be: a name, a public id (a UUID is also a valid name), `<owner email>/<name>`. */
export function parseReference(ref: string, names: RegExp): ParsedRef {
  const parsed: ParsedRef = {}
  if (names.test(ref)) parsed.name = ref
  if (PUBLIC_ID.test(ref)) parsed.publicId = ref.toLowerCase()
  if (isQualifiedRef(ref, names)) {
    const slash = ref.lastIndexOf('/')
    parsed.owner = { email: ref.slice(0, slash).trim().toLowerCase(), name: ref.slice(slash + 1) }
  }
  return parsed
}

/**
 * The one resolver, for every kind of shared object: a reference → the object and the caller's
 * access, in the contract's order:
 *
 * 1. the caller's own object of that name;
 * 2. an object `id` (its public UUID);
 * 3. `<owner email>/<name>`;
 * 4. the one object of that name shared with the caller (two or more: 409 `AMBIGUOUS_<KIND>`
 *    listing their qualified names).
 *
 * Access is the owner's, or the highest role any entry gives (the user, a group they are in,
 * everyone); admins manage every object they name by id or `<owner email>/<name>`. Nothing
 * reached: 404, never a hint that it exists; reached with too little: 403. Read fresh from the
 * database on every call: a share, a member or a group removed counts from the next request, on
 * every replica. Every place that reads or writes such an object calls this and no other rule.
 */
export class ResourceResolver<Row extends OwnedRow> {
  constructor(
    readonly kind: ResourceKind,
    readonly lookup: ResourceLookup<Row>,
  ) {}

  resolveRow(userId: string, ref: string, need: Need = 'viewer'): MaybePromise<ResolvedRow<Row>> {
    return runSteps(this.rowSteps(userId, ref, need))
  }

  *rowSteps(userId: string, ref: string, need: Need = 'viewer'): Steps<ResolvedRow<Row>> {
    const found = yield* this.findRow(userId, ref)
    if (!found) throw notFound(`${this.kind.label} ${ref}`)
    if (ACCESS_RANK[found.access] >= ACCESS_RANK[need]) return found
    // Admins manage every object (all but what only its owner is: none of the operations needs 'owner').
    if (need !== 'owner' && (yield* wait(this.lookup.isAdmin(userId)))) return { row: found.row, access: 'manager' }
    const owner = yield* wait(this.lookup.owner(found.row.user_id))
    throw new AppError('FORBIDDEN', this.forbidden(ref, found.row, `${owner?.email ?? found.row.user_id}/${found.row.name}`, found.access, need))
  }

  /**
   * Why a reached object refuses an operation, naming the object the reference resolved to
   * (`<owner email>/<name>`): a bare name the caller has none of resolves to one shared with them,
   * so a write meant to make their own lands there; the message says how to make one instead.
   */
  private forbidden(ref: string, row: Row, qualified: string, access: Access, need: Need): string {
    const refused = `Your access to ${this.kind.noun} ${qualified} (${access}) does not allow this: it needs ${need}`
    if (ref !== row.name || !this.kind.create) return `${refused}.`
    return (
      `${refused}. "${ref}" names ${qualified}, shared with you, because you have no ${this.kind.noun} of your own by that name: ` +
      `to make one, create it first (${this.kind.create(ref)}), then write to it.`
    )
  }

  /** `<owner email>/<name>` of the object a reference names (one name for it whichever way it was named). */
  qualifiedName(userId: string, ref: string): MaybePromise<string> {
    const lookup = this.lookup
    const resolved = this.rowSteps(userId, ref)
    return runSteps(
      (function* () {
        const { row } = yield* resolved
        const owner = yield* wait(lookup.owner(row.user_id))
        return `${owner?.email ?? row.user_id}/${row.name}`
      })(),
    )
  }

  /** The object a reference names for the caller, or null (see the class). */
  *findRow(userId: string, ref: string): Steps<ResolvedRow<Row> | null> {
    const parsed = parseReference(ref, this.kind.names)
    if (parsed.name === undefined && parsed.publicId === undefined && !parsed.owner) return null
    const found = yield* wait(this.lookup.candidates(userId, parsed))
    if (found.own) return { row: found.own, access: 'owner' }
    for (const hit of [found.byId, found.byOwner]) {
      const reached = hit && (yield* this.reach(userId, hit))
      if (reached) return reached
    }
    const { shared } = found
    if (shared.length > 1) {
      const names = shared.map((entry) => `${entry.ownerEmail}/${entry.row.name}`)
      throw new AppError(
        this.kind.ambiguous,
        `${this.kind.label} ${ref} is ambiguous: ${names.length} ${this.kind.plural} of that name are shared with you (${names.join(', ')}); name one as <owner email>/<name> or by id`,
      )
    }
    return shared[0] ? { row: shared[0].row, access: shared[0].role } : null
  }

  /** The caller's access to an object found by id or qualified name, or null when they have none. */
  private *reach(userId: string, { row, role }: Reached<Row>): Steps<ResolvedRow<Row> | null> {
    if (row.user_id === userId) return { row, access: 'owner' }
    if (role) return { row, access: role }
    if (yield* wait(this.lookup.isAdmin(userId))) return { row, access: 'manager' }
    return null
  }
}
