import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { copyToPostgres, foreignKeyOrder } from '../../src/db/copy-to-postgres'
import { openPostgres } from '../../src/db/postgres'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

describe('foreign-key order', () => {
  test('a referenced table comes before those referencing it, ties by name', () => {
    expect(foreignKeyOrder(['messages', 'conversations', 'attachments', 'api_keys'], [
      { child: 'messages', parent: 'conversations' },
      { child: 'attachments', parent: 'messages' },
      { child: 'conversations', parent: 'conversations' },
    ])).toEqual(['api_keys', 'conversations', 'messages', 'attachments'])
  })
})

const suite = TEST_DATABASE_URL ? describe : describe.skip
suite(`copying SQLite tables into PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test("values are converted by the PostgreSQL column's type: 0/1 to boolean, BLOB to bytea, JSON text to jsonb, epoch ms to timestamptz; identities move past the ids", async () => {
    const sql = await openPostgres((await emptyPostgresDatabase()).url, [])
    try {
      await sql.unsafe(`CREATE TABLE owners (id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE things (id TEXT PRIMARY KEY, owner INTEGER NOT NULL REFERENCES owners(id), flag BOOLEAN NOT NULL, data BYTEA, doc JSONB, at TIMESTAMPTZ, note TEXT DEFAULT 'none')`)
      const db = new Database(':memory:')
      db.run(`CREATE TABLE things (id TEXT PRIMARY KEY, owner INTEGER NOT NULL, flag INTEGER NOT NULL, data BLOB, doc TEXT, at INTEGER, extra TEXT);
        CREATE TABLE owners (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE only_here (x INTEGER);
        INSERT INTO owners (id, name) VALUES (7, 'ana'), (9, 'bo');
        INSERT INTO only_here VALUES (1), (2);`)
      db.run('INSERT INTO things VALUES (?, ?, ?, ?, ?, ?, ?)', ['a', 7, 1, new Uint8Array([0, 1, 254, 255]), '{"k": [1, "two"]}', Date.UTC(2026, 0, 2, 3, 4, 5), 'left'])
      db.run('INSERT INTO things VALUES (?, ?, ?, ?, ?, ?, ?)', ['b', 9, 0, null, null, null, null])
      const report = await copyToPostgres([{ name: 'test.db', db }], sql)
      expect(report.copied.map((t) => [t.table, t.rows, t.copied])).toEqual([['owners', 2, 2], ['things', 2, 2]])
      expect(report.copied[1]!.leftOut).toEqual(['extra'])
      expect(report.skipped).toEqual([{ table: 'only_here', source: 'test.db', rows: 2, why: 'no PostgreSQL table' }])
      const rows = await sql.unsafe(`SELECT id, owner, flag, encode(data, 'hex') AS data, doc->'k'->>1 AS two, at = '2026-01-02T03:04:05Z'::timestamptz AS at, note FROM things ORDER BY id`)
      expect([...rows]).toEqual([
        { id: 'a', owner: 7, flag: true, data: '0001feff', two: 'two', at: true, note: 'none' },
        { id: 'b', owner: 9, flag: false, data: null, two: null, at: null, note: 'none' },
      ])
      // The identity continues after the copied ids.
      expect((await sql.unsafe("INSERT INTO owners (name) VALUES ('cy') RETURNING id"))[0].id).toBe(10)
      db.close()
    } finally {
      await sql.close()
    }
  })
})
