import type { MaybePromise } from '../../../db/maybe-promise'
import type { Access } from '../../access/roles'
import type { Candidates as CandidatesOf, ParsedRef, Reached as ReachedOf, ResourceLookup, SharedWith, ShareList, ShareTable } from '../../access/store'
import type { CollectionRow, CollectionSummary } from '../store'

// Roles, entries and the SQL rule of who an entry reaches are every shared kind's (src/modules/access).
export { type Access, ACCESS_RANK, highestPerObject as highestPerCollection, highestRole, isAdminRoles, type PrincipalType, reachesUser, SHARE_ROLES, type ShareEntry, type ShareRole, shareView, type ShareView } from '../../access/roles'
export type { ParsedRef } from '../../access/store'

/** A collection someone else owns that the caller reaches through an entry. */
export type SharedRow = SharedWith<CollectionRow>
/** A collection found by id or owner/name, with the highest role the caller's entries give (null: none). */
export type Reached = ReachedOf<CollectionRow>
/**
 * Every collection a reference may name for a caller, by form (the resolver applies the order).
 * When `own` is found the others may be left out: the caller's own collection always wins.
 */
export type Candidates = CandidatesOf<CollectionRow>

/** A collection as the caller's listing shows it: its counts, its owner and the caller's access. */
export type AccessibleRow = CollectionSummary & { owner_email: string; access: Access }

/** Where collections' access lists live (migration 42). */
export const COLLECTION_SHARES: ShareTable = { table: 'rag_collection_shares', key: 'collection_id' }

/**
 * The access lists of collections (rag_collection_shares) and the look-ups the one resolver
 * (src/modules/access/resolver.ts) makes: an entry reaches a user directly, through any group they
 * are in (group_members), or as everyone. SQLite answers at once, PostgreSQL with promises. Nothing
 * is cached: a share, a member or a group removed is seen by the very next request on every replica.
 */
export interface AccessStore extends ResourceLookup<CollectionRow>, ShareList {
  /** What a reference may name (see Candidates): SQLite probes one form after another, PostgreSQL asks once. */
  candidates(userId: string, ref: ParsedRef): MaybePromise<Candidates>
  byPublicId(publicId: string): MaybePromise<CollectionRow | null>
  /** The caller's own collections and those shared with them, by name then owner. */
  accessible(userId: string): MaybePromise<AccessibleRow[]>
}
