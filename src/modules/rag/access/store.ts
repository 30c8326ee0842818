import type { MaybePromise } from '../../../db/maybe-promise'
import type { CollectionRow, CollectionSummary } from '../store'

/** A role an access list entry gives. */
export type ShareRole = 'viewer' | 'editor' | 'manager'
/** What a caller may do with a collection: its owner, or the highest role an entry gives them. */
export type Access = 'owner' | ShareRole

export const SHARE_ROLES: readonly ShareRole[] = ['viewer', 'editor', 'manager']
export const ACCESS_RANK: Record<Access, number> = { viewer: 1, editor: 2, manager: 3, owner: 4 }

export type PrincipalType = 'user' | 'group' | 'everyone'

/** An access list entry as stored: `principalId` is a user's or a group's id ('' for everyone). */
export interface ShareEntry {
  type: PrincipalType
  principalId: string
  role: ShareRole
}

/** An entry as `GET …/access` shows it: with the user's email or the group's name. */
export interface ShareView {
  type: PrincipalType
  id?: string
  email?: string
  name?: string
  role: ShareRole
}

/** A collection someone else owns that the caller reaches through an entry. */
export interface SharedRow {
  collection: CollectionRow
  role: ShareRole
  ownerEmail: string
}

/** A reference taken apart: the forms it may be (a name, a public id, `<owner email>/<name>`). */
export interface ParsedRef {
  name?: string
  publicId?: string
  owner?: { email: string; name: string }
}

/** A collection found by id or owner/name, with the highest role the caller's entries give (null: none). */
export interface Reached {
  collection: CollectionRow
  role: ShareRole | null
}

/**
 * Every collection a reference may name for a caller, by form (the resolver applies the order).
 * When `own` is found the others may be left out: the caller's own collection always wins.
 */
export interface Candidates {
  own: CollectionRow | null
  byId: Reached | null
  byOwner: Reached | null
  shared: SharedRow[]
}

/** A collection as the caller's listing shows it: its counts, its owner and the caller's access. */
export type AccessibleRow = CollectionSummary & { owner_email: string; access: Access }

/**
 * The access lists of collections (rag_collection_shares) and the look-ups the one resolver
 * (resolver.ts) makes: an entry reaches a user directly, through any group they are in
 * (group_members), or as everyone. SQLite answers at once, PostgreSQL with promises. Nothing is
 * cached: a share, a member or a group removed is seen by the very next request on every replica.
 */
export interface AccessStore {
  /** What a reference may name (see Candidates): SQLite probes one form after another, PostgreSQL asks once. */
  candidates(userId: string, ref: ParsedRef): MaybePromise<Candidates>
  byPublicId(publicId: string): MaybePromise<CollectionRow | null>
  isAdmin(userId: string): MaybePromise<boolean>
  /** The caller's own collections and those shared with them, by name then owner. */
  accessible(userId: string): MaybePromise<AccessibleRow[]>
  owner(userId: string): MaybePromise<{ id: string; email: string } | null>
  /** A collection's entries, those naming a user or group that no longer exists left out. */
  shares(collectionId: number): MaybePromise<ShareView[]>
  /** Replaces a collection's entries, in one transaction. */
  replaceShares(collectionId: number, entries: ShareEntry[]): MaybePromise<void>
  /** A user by id or email (lowercase). */
  findUser(by: { id?: string; email?: string }): MaybePromise<{ id: string; email: string } | null>
  /** A group by id or name. */
  findGroup(by: { id?: string; name?: string }): MaybePromise<{ id: string; name: string } | null>
}

/**
 * The SQL condition "entry s reaches user $USER" (a user entry, a group they are in, everyone);
 * `user` is the placeholder of their id. EXISTS, not IN: SQLite runs it as an index probe per
 * entry, where IN builds the member's group list anew on every call.
 */
export function reachesUser(user: string): string {
  return `(s.principal_type = 'everyone' OR (s.principal_type = 'user' AND s.principal_id = ${user})
    OR (s.principal_type = 'group' AND EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = s.principal_id AND gm.user_id = ${user})))`
}

/** The highest of some roles, or null (an aggregate in SQL costs more than the few rows it reads). */
export function highestRole(roles: Iterable<ShareRole>): ShareRole | null {
  let best: ShareRole | null = null
  for (const role of roles) if (best === null || ACCESS_RANK[role] > ACCESS_RANK[best]) best = role
  return best
}

/** Rows of (collection, role), one per entry that reaches the user: one per collection with its highest role, in first-seen order. */
export function highestPerCollection<T extends { id: number; role: ShareRole }>(rows: T[]): T[] {
  const best = new Map<number, T>()
  for (const row of rows) {
    const seen = best.get(row.id)
    if (!seen || ACCESS_RANK[row.role] > ACCESS_RANK[seen.role]) best.set(row.id, row)
  }
  return [...best.values()]
}

export function isAdminRoles(roles: string | null | undefined): boolean {
  if (!roles) return false
  try {
    const parsed = JSON.parse(roles) as unknown
    return Array.isArray(parsed) && parsed.includes('admin')
  } catch {
    return false
  }
}

/** An entry as the API shows it. */
export function shareView(row: { type: ShareView['type']; id: string; role: ShareRole; email: string | null; name: string | null }): ShareView {
  if (row.type === 'everyone') return { type: 'everyone', role: row.role }
  if (row.type === 'user') return { type: 'user', id: row.id, email: row.email ?? '', role: row.role }
  return { type: 'group', id: row.id, name: row.name ?? '', role: row.role }
}
