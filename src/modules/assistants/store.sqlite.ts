import type { Database } from 'bun:sqlite'
import { SqliteOwnedLookup } from '../access/lookup.sqlite'
import { ASSISTANTS_TABLE, type AssistantRow, type AssistantStore } from './store'

const COLUMNS = ['id', 'user_id', 'name', 'description', 'instructions', 'collections', 'tools', 'model', 'temperature', 'starters', 'created_at', 'updated_at'] as const
const values = (row: AssistantRow) => COLUMNS.map((column) => row[column])

/** Assistants in SQLite (see AssistantStore). */
export class SqliteAssistantStore extends SqliteOwnedLookup<AssistantRow> implements AssistantStore {
  constructor(db: Database) {
    super(db, ASSISTANTS_TABLE)
  }

  insert(row: AssistantRow): void {
    this.db.run(`INSERT INTO assistants (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`, values(row))
  }

  update(row: AssistantRow): void {
    const set = COLUMNS.filter((c) => c !== 'id' && c !== 'user_id' && c !== 'created_at')
    this.db.run(`UPDATE assistants SET ${set.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`, [...set.map((c) => row[c]), row.id])
  }

  delete(id: string): void {
    this.db.run('DELETE FROM assistants WHERE id = ?', [id])
  }
}
