import { describe, expect, test } from 'bun:test'
import { statSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { tempDir } from '../helpers'

describe('openDatabase', () => {
  test('a new database and its folder are readable by their owner alone; migrations applied; WAL and sqlite-vec on', () => {
    const root = tempDir('db')
    const path = join(root, 'data', 'uagent.db')
    const db = openDatabase(path)
    db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'a@b.c', 'h', '[]', 'now')")
    expect(statSync(join(root, 'data')).mode & 0o777).toBe(0o700)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600)
    expect(db.query<{ journal_mode: string }, []>('PRAGMA journal_mode').get()!.journal_mode).toBe('wal')
    expect(db.query<{ v: string }, []>('SELECT vec_version() AS v').get()!.v).toStartWith('v')
    expect(db.query<{ n: number }, []>('SELECT count(*) AS n FROM schema_migrations').get()!.n).toBeGreaterThan(0)
    db.close()
    // Reopening keeps the data and applies nothing twice.
    const again = openDatabase(path)
    expect(again.query<{ n: number }, []>('SELECT count(*) AS n FROM users').get()!.n).toBe(1)
    again.close()
  })

  test("an existing database keeps the mode its operator chose", () => {
    const path = join(tempDir('db'), 'shared.db')
    writeFileSync(path, '')
    chmodSync(path, 0o640)
    openDatabase(path).close()
    expect(statSync(path).mode & 0o777).toBe(0o640)
  })
})
