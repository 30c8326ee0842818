import type { Postgres } from '../../db/postgres'
import { PostgresOwnedLookup } from '../access/lookup.postgres'
import { ASSISTANTS_TABLE, type AssistantRow, type AssistantStore } from './store'

const COLUMNS = ['id', 'user_id', 'name', 'description', 'instructions', 'collections', 'tools', 'model', 'temperature', 'starters', 'created_at', 'updated_at'] as const

const toRow = (row: Record<string, unknown>): AssistantRow => ({
  ...(row as unknown as AssistantRow),
  temperature: row.temperature === null || row.temperature === undefined ? null : Number(row.temperature),
})

/** Assistants in PostgreSQL (see AssistantStore). */
export class PostgresAssistantStore extends PostgresOwnedLookup<AssistantRow> implements AssistantStore {
  constructor(sql: Postgres) {
    super(sql, ASSISTANTS_TABLE, toRow)
  }

  async insert(row: AssistantRow): Promise<void> {
    await this.sql.unsafe(
      `INSERT INTO assistants (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`,
      COLUMNS.map((c) => row[c]),
    )
  }

  async update(row: AssistantRow): Promise<void> {
    const set = COLUMNS.filter((c) => c !== 'id' && c !== 'user_id' && c !== 'created_at')
    await this.sql.unsafe(`UPDATE assistants SET ${set.map((c, i) => `${c} = $${i + 1}`).join(', ')} WHERE id = $${set.length + 1}`, [...set.map((c) => row[c]), row.id])
  }

  async delete(id: string): Promise<void> {
    await this.sql.unsafe('DELETE FROM assistants WHERE id = $1', [id])
  }
}
