import type { MaybePromise } from '../../db/maybe-promise'
import type { ShareEntry, ShareRole, ShareView } from './roles'

/**
 * What the one resolver needs of a kind of shared object (a collection, an assistant, a
 * conversation…): the columns every such row has.
 */
export interface OwnedRow {
  user_id: string
  name: string
}

/** A reference taken apart: the forms it may be (a name, a public id, `<owner email>/<name>`). */
export interface ParsedRef {
  name?: string
  publicId?: string
  owner?: { email: string; name: string }
}

/** An object found by id or owner/name, with the highest role the caller's entries give (null: none). */
export interface Reached<Row> {
  row: Row
  role: ShareRole | null
}

/** An object someone else owns that the caller reaches through an entry. */
export interface SharedWith<Row> {
  row: Row
  role: ShareRole
  ownerEmail: string
}

/**
 * Every object a reference may name for a caller, by form (the resolver applies the order).
 * When `own` is found the others may be left out: the caller's own object always wins.
 */
export interface Candidates<Row> {
  own: Row | null
  byId: Reached<Row> | null
  byOwner: Reached<Row> | null
  shared: SharedWith<Row>[]
}

/** The look-ups the resolver makes (SQLite answers at once, PostgreSQL with promises). Nothing is cached. */
export interface ResourceLookup<Row> {
  candidates(userId: string, ref: ParsedRef): MaybePromise<Candidates<Row>>
  isAdmin(userId: string): MaybePromise<boolean>
  owner(userId: string): MaybePromise<{ id: string; email: string } | null>
}

/** An object's access list, read and replaced (the sharing service's needs). */
export interface ShareList {
  owner(userId: string): MaybePromise<{ id: string; email: string } | null>
  /** An object's entries, those naming a user or group that no longer exists left out. */
  shares(key: number | string): MaybePromise<ShareView[]>
  /** Replaces an object's entries, in one transaction. */
  replaceShares(key: number | string, entries: ShareEntry[]): MaybePromise<void>
  /** A user by id or email (lowercase). */
  findUser(by: { id?: string; email?: string }): MaybePromise<{ id: string; email: string } | null>
  /** A group by id or name. */
  findGroup(by: { id?: string; name?: string }): MaybePromise<{ id: string; name: string } | null>
}

/**
 * Where a kind's access list lives: `<table>(<key>, principal_type, principal_id, role,
 * created_at)`, keyed by the object's row key. Collections: rag_collection_shares(collection_id).
 */
export interface ShareTable {
  table: string
  key: string
}
