import { accounts } from './001_accounts'

export interface Migration {
  version: number
  name: string
  /** One or more statements, run in one transaction. */
  sql: string
}

/** Every migration, in order. A new area adds its file and one line here. */
export const MIGRATIONS: Migration[] = [accounts]
