import type { Database } from 'bun:sqlite'
import type { Postgres } from './postgres'
import { ENCODED_TEXT_COLUMNS, toPgText } from './pg-text'

/** Why a copy was refused or undone (nothing was changed in PostgreSQL). */
export class CopyError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CopyError'
  }
}

/** A SQLite database to copy from, and the name the report gives it (its file name). */
export interface CopySource {
  name: string
  db: Database
}

export interface CopiedTable {
  table: string
  /** The SQLite database it came from. */
  source: string
  /** Rows in SQLite, and rows in PostgreSQL after the copy (checked equal). */
  rows: number
  copied: number
  /** SQLite columns PostgreSQL's table does not have (not copied). */
  leftOut: string[]
}

export interface CopyReport {
  copied: CopiedTable[]
  /** SQLite tables without a PostgreSQL table: not copied (their data stays in the SQLite files). */
  skipped: { table: string; source: string; rows: number | null; why: string }[]
  /** PostgreSQL tables no SQLite database has (left empty). */
  postgresOnly: string[]
}

interface PgColumn {
  name: string
  /** information_schema data_type: integer, boolean, bytea, jsonb, timestamp with time zone, … */
  type: string
  nullable: boolean
  hasDefault: boolean
  /** A column whose values come from a sequence (identity or serial): moved past the copied ids. */
  sequenced: boolean
}

/** Rows per INSERT: one statement of a few thousand rows, sent as one JSON document. */
const ROWS_PER_INSERT = 2000

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * The PostgreSQL tables in an order that satisfies their foreign keys (a referenced table before
 * the tables that reference it), ties by name.
 */
export function foreignKeyOrder(tables: string[], references: { child: string; parent: string }[]): string[] {
  const parents = new Map(tables.map((table) => [table, new Set<string>()]))
  for (const { child, parent } of references) if (child !== parent && parents.has(child) && parents.has(parent)) parents.get(child)!.add(parent)
  const order: string[] = []
  const done = new Set<string>()
  while (order.length < tables.length) {
    const ready = [...parents].filter(([table, needs]) => !done.has(table) && [...needs].every((parent) => done.has(parent))).map(([table]) => table).sort()
    // A cycle of foreign keys (none in this schema): the rest in name order, checked at commit.
    const next = ready.length ? ready : tables.filter((table) => !done.has(table)).sort()
    for (const table of next) {
      done.add(table)
      order.push(table)
    }
  }
  return order
}

/** A SQLite value as PostgreSQL's column type takes it in a JSON document (json_populate_recordset). */
function convert(value: unknown, column: PgColumn, table: string): unknown {
  if (value === null || value === undefined) return null
  if (typeof value === 'string' && ENCODED_TEXT_COLUMNS[table]?.includes(column.name)) return toPgText(value)
  switch (column.type) {
    case 'boolean':
      // SQLite keeps booleans as 0/1.
      return typeof value === 'number' || typeof value === 'bigint' ? Number(value) !== 0 : value === 'true' || value === 't' || value === '1'
    case 'bytea': {
      const bytes = value instanceof Uint8Array ? value : new TextEncoder().encode(String(value))
      return `\\x${Buffer.from(bytes).toString('hex')}`
    }
    case 'json':
    case 'jsonb':
      if (typeof value !== 'string') return value
      try {
        return JSON.parse(value)
      } catch {
        throw new CopyError(`${table}.${column.name} holds text that is not JSON, and its PostgreSQL column is ${column.type}`)
      }
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      // Epoch milliseconds in SQLite; ISO text is taken as it is.
      return typeof value === 'number' ? new Date(value).toISOString() : value
    default:
      if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
      if (typeof value === 'bigint') return value.toString()
      return value
  }
}

/** SQLite's tables, without its own, the migrations' bookkeeping, and the shadow tables of virtual tables (the virtual table stands for them). */
function sqliteTables(db: Database): { name: string; virtual: boolean }[] {
  const rows = db.query<{ name: string; sql: string | null }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all()
  const virtual = rows.filter((row) => /^CREATE VIRTUAL TABLE/i.test(row.sql ?? '')).map((row) => row.name)
  return rows
    .filter((row) => row.name !== 'schema_migrations' && !virtual.some((name) => row.name.startsWith(`${name}_`)))
    .map((row) => ({ name: row.name, virtual: virtual.includes(row.name) }))
}

function countRows(db: Database, table: string): number | null {
  try {
    return db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${quote(table)}`).get()!.n
  } catch {
    return null
  }
}

/**
 * Copies SQLite databases into an empty, migrated PostgreSQL database, in one transaction: every
 * PostgreSQL table that one of the sources has, in foreign-key order, with the columns both have
 * (values converted by the PostgreSQL column's type: 0/1 to boolean, BLOB to bytea, JSON text to
 * jsonb, epoch milliseconds to timestamps), ids kept and sequences moved past them. Then the rows
 * of every table are counted on both sides; any difference undoes the whole copy. Works from
 * what the two schemas hold, so that tables given PostgreSQL adapters later are copied too.
 * Throws a CopyError (nothing changed) when PostgreSQL already holds rows or a copy fails.
 */
export async function copyToPostgres(
  sources: CopySource[],
  sql: Postgres,
  progress: (line: string) => void = () => {},
  /** More to write in the same transaction, once every table is copied and counted (tables lists PostgreSQL's). */
  finish?: (tx: Postgres, tables: string[]) => Promise<void>,
): Promise<CopyReport> {
  const tables: string[] = (
    await sql.unsafe(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1`,
    )
  ).map((row: { name: string }) => row.name)
  const nonEmpty: string[] = []
  for (const table of tables) {
    const [row] = await sql.unsafe(`SELECT count(*)::float8 AS n FROM ${quote(table)}`)
    if (row.n > 0) nonEmpty.push(`${table} (${row.n} rows)`)
  }
  if (nonEmpty.length) {
    throw new CopyError(`the PostgreSQL database is not empty: ${nonEmpty.join(', ')}. Migrate into a new, empty database (e.g. createdb -O uagent uagent_new); nothing was changed`)
  }
  const columns = new Map<string, PgColumn[]>()
  for (const row of await sql.unsafe(
    `SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity, is_generated
     FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  )) {
    if (row.is_generated === 'ALWAYS') continue
    const list = columns.get(row.table_name) ?? []
    list.push({
      name: row.column_name,
      type: row.data_type,
      nullable: row.is_nullable === 'YES',
      hasDefault: row.column_default !== null || row.is_identity === 'YES',
      sequenced: row.is_identity === 'YES' || /^nextval\(/.test(row.column_default ?? ''),
    })
    columns.set(row.table_name, list)
  }
  const references: { child: string; parent: string }[] = [
    ...(await sql.unsafe(
      `SELECT DISTINCT tc.table_name AS child, ccu.table_name AS parent
       FROM information_schema.table_constraints tc
       JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_schema = tc.constraint_schema AND ccu.constraint_name = tc.constraint_name
       WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()`,
    )),
  ]

  // Where each table comes from: the first source that has it.
  const origin = new Map<string, CopySource>()
  const report: CopyReport = { copied: [], skipped: [], postgresOnly: [] }
  for (const source of sources) {
    for (const { name, virtual } of sqliteTables(source.db)) {
      if (origin.has(name)) continue
      if (tables.includes(name) && !virtual) origin.set(name, source)
      else report.skipped.push({ table: name, source: source.name, rows: countRows(source.db, name), why: virtual ? 'a SQLite index (virtual table)' : 'no PostgreSQL table' })
    }
  }

  await sql.begin(async (tx) => {
    for (const table of foreignKeyOrder(tables, references)) {
      const source = origin.get(table)
      if (!source) {
        report.postgresOnly.push(table)
        continue
      }
      const target = columns.get(table) ?? []
      const sqliteColumns = source.db.query<{ name: string }, []>(`PRAGMA table_info(${quote(table)})`).all().map((row) => row.name)
      const shared = target.filter((column) => sqliteColumns.includes(column.name))
      const missing = target.filter((column) => !sqliteColumns.includes(column.name) && !column.nullable && !column.hasDefault)
      if (missing.length) throw new CopyError(`${table}: PostgreSQL's column ${missing.map((c) => c.name).join(', ')} is required and the SQLite table has no such column`)
      const names = shared.map((column) => quote(column.name)).join(', ')
      const insert = `INSERT INTO ${quote(table)} (${names}) OVERRIDING SYSTEM VALUE SELECT ${names} FROM json_populate_recordset(NULL::${quote(table)}, $1::text::json)`
      const rows = countRows(source.db, table) ?? 0
      progress(`${table}: copying ${rows} rows from ${source.name}`)
      // In the order SQLite stored them (their rowid) where there is one, so that ids generated
      // in PostgreSQL follow the same order.
      const hasRowid = source.db.query<{ found: number }, [string]>("SELECT 1 AS found FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'").get(table) === null
      const read = source.db.query<Record<string, unknown>, []>(`SELECT ${shared.map((column) => quote(column.name)).join(', ')} FROM ${quote(table)}${hasRowid ? ' ORDER BY rowid' : ''}`)
      let batch: Record<string, unknown>[] = []
      const send = async () => {
        if (!batch.length) return
        const json = JSON.stringify(batch)
        batch = []
        try {
          await tx.unsafe(insert, [json])
        } catch (error) {
          throw new CopyError(`${table}: PostgreSQL refused rows (${(error as Error).message.replace(/\s+/g, ' ').trim()})`)
        }
      }
      for (const row of read.iterate()) {
        const converted: Record<string, unknown> = {}
        for (const column of shared) converted[column.name] = convert(row[column.name], column, table)
        batch.push(converted)
        if (batch.length === ROWS_PER_INSERT) await send()
      }
      await send()
      for (const column of shared.filter((c) => c.sequenced)) {
        await tx.unsafe(`SELECT setval(pg_get_serial_sequence($1, $2), max(${quote(column.name)})) FROM ${quote(table)} HAVING max(${quote(column.name)}) IS NOT NULL`, [quote(table), column.name])
      }
      const [counted] = await tx.unsafe(`SELECT count(*)::float8 AS n FROM ${quote(table)}`)
      const copied = Number(counted.n)
      if (copied !== rows) throw new CopyError(`${table}: ${rows} rows in ${source.name} but ${copied} in PostgreSQL after the copy; the copy was undone`)
      report.copied.push({ table, source: source.name, rows, copied, leftOut: sqliteColumns.filter((name) => !target.some((column) => column.name === name)) })
    }
    // The conversations' word index (migration 082) is made from the copied messages, as the migration makes it.
    if (tables.includes('conversation_words') && report.copied.some((c) => c.table === 'messages')) {
      progress('conversation_words: indexing the conversations\' words')
      await tx.unsafe(
        "INSERT INTO conversation_words (conversation_id, user_id, updated_at, words, title_words) SELECT id, user_id, updated_at, conversation_words_of(id), to_tsvector('simple', title) FROM conversations",
      )
      // And the messages' words (migration 084).
      await tx.unsafe("INSERT INTO message_words (message_id, conversation_id, words) SELECT id, conversation_id, to_tsvector('simple', content) FROM messages")
      await tx.unsafe('UPDATE conversations SET words_stale = false')
    }
    await finish?.(tx as unknown as Postgres, tables)
  })
  return report
}
