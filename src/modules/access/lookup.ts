import type { ShareTable } from './store'

/**
 * Where a kind's rows live, for the generic look-ups (lookup.sqlite.ts, lookup.postgres.ts):
 * `table` has `user_id` and `name`; `publicId` is the column a reference by id names; the
 * access list is `shares`, whose key column holds the row's `key` column.
 */
export interface OwnedTable {
  table: string
  publicId: string
  key: string
  shares: ShareTable
}
