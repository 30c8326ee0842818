import type { MaybePromise } from '../../db/maybe-promise'
import type { OwnedTable } from '../access/lookup'
import type { Access } from '../access/roles'
import type { ResourceLookup, ShareList } from '../access/store'

/** An assistant as stored: lists as JSON text (collections by their public ids). */
export interface AssistantRow {
  id: string
  user_id: string
  name: string
  description: string
  instructions: string
  collections: string
  tools: string
  model: string | null
  temperature: number | null
  starters: string
  created_at: string
  updated_at: string
}

/** An assistant as a listing reads it: with its owner's email and the caller's access. */
export type AccessibleAssistant = AssistantRow & { owner_email: string; access: Access }

/** Where assistants and their access lists live (migration 70). */
export const ASSISTANTS_TABLE: OwnedTable = { table: 'assistants', publicId: 'id', key: 'id', shares: { table: 'assistant_shares', key: 'assistant_id' } }

/**
 * Stored assistants (store.sqlite.ts, store.postgres.ts), and the look-ups the one resolver
 * (src/modules/access/resolver.ts) makes for them. Nothing is cached: an assistant changed or
 * unshared on one replica is seen as it is now by the next request on every replica.
 */
export interface AssistantStore extends ResourceLookup<AssistantRow>, ShareList {
  /** A new assistant; a UNIQUE (user_id, name) violation when the owner has one of that name. */
  insert(row: AssistantRow): MaybePromise<void>
  /** Writes every field of a stored assistant (by id); UNIQUE violation as insert. */
  update(row: AssistantRow): MaybePromise<void>
  delete(id: string): MaybePromise<void>
  byPublicId(id: string): MaybePromise<AssistantRow | null>
  /** The caller's own assistants and those shared with them (highest role each). */
  accessibleRows(userId: string): MaybePromise<AccessibleAssistant[]>
}
