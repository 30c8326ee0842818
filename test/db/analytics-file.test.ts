import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { MIGRATIONS } from '../../src/db/migrations'
import { tempDir } from '../helpers'

describe('request records in a file of their own', () => {
  test('migration 014 moves the records of an existing database into analytics.db beside it, once, and drops them there', () => {
    const dir = tempDir('analytics-move')
    const path = join(dir, 'uagent.db')
    const before = openDatabase(path, MIGRATIONS.filter((migration) => migration.version < 14))
    before.run("INSERT INTO analytics_strings (id, value) VALUES (1, 'GET'), (2, '/health'), (3, 'user-1')")
    before.run('INSERT INTO analytics_records (ts, method, route, status, duration_ms, user_id) VALUES (1000, 1, 2, 200, 1.5, 3), (2000, 1, 2, 500, 2.5, NULL)')
    before.run("INSERT INTO analytics_hourly (hour, method, route, user_id, model, requests, failures, duration_sum, prompt_tokens, completion_tokens) VALUES (0, 'GET', '/health', 'user-1', '', 2, 1, 4, 0, 0)")
    before.run('INSERT INTO analytics_spans (minute, first_id, last_id) VALUES (0, 1, 2)')
    before.close()

    const after = openDatabase(path)
    expect(after.query("SELECT name FROM sqlite_master WHERE name LIKE 'analytics%'").all()).toEqual([])
    after.close()
    expect(existsSync(join(dir, 'analytics.db'))).toBe(true)
    const records = new Database(join(dir, 'analytics.db'), { readonly: true })
    expect(records.query('SELECT ts, method, route, status, user_id AS userId FROM analytics_requests ORDER BY id').all()).toEqual([
      { ts: 1000, method: 'GET', route: '/health', status: 200, userId: 'user-1' },
      { ts: 2000, method: 'GET', route: '/health', status: 500, userId: null },
    ])
    expect(records.query('SELECT requests, failures FROM analytics_hourly').all()).toEqual([{ requests: 2, failures: 1 }])
    expect(records.query('SELECT first_id, last_id FROM analytics_spans').all()).toEqual([{ first_id: 1, last_id: 2 }])
    records.close()
    // Opened again: nothing more to move, nothing copied twice.
    openDatabase(path).close()
    const again = new Database(join(dir, 'analytics.db'), { readonly: true })
    expect(again.query('SELECT count(*) AS n FROM analytics_records').get()).toEqual({ n: 2 })
    again.close()
  })

  test('a copy already made (a crash before the drop) is not made twice', () => {
    const dir = tempDir('analytics-move-twice')
    const path = join(dir, 'uagent.db')
    const before = openDatabase(path, MIGRATIONS.filter((migration) => migration.version < 14))
    before.run("INSERT INTO analytics_strings (id, value) VALUES (1, 'GET'), (2, '/health')")
    before.run('INSERT INTO analytics_records (ts, method, route, status, duration_ms) VALUES (1000, 1, 2, 200, 1.5)')
    // The copy committed, then the process died before migration 014's drop.
    const target = openDatabase(join(dir, 'analytics.db'), MIGRATIONS.filter((migration) => [7, 12, 13].includes(migration.version)), { vectors: false })
    target.run("INSERT INTO analytics_strings (id, value) VALUES (1, 'GET'), (2, '/health')")
    target.run('INSERT INTO analytics_records (ts, method, route, status, duration_ms) VALUES (1000, 1, 2, 200, 1.5)')
    target.close()
    before.close()
    openDatabase(path).close()
    const records = new Database(join(dir, 'analytics.db'), { readonly: true })
    expect(records.query('SELECT count(*) AS n FROM analytics_records').get()).toEqual({ n: 1 })
    records.close()
  })

  test('two servers opening one new database at the same moment migrate it once', async () => {
    const dir = tempDir('migrate-once')
    const path = join(dir, 'uagent.db')
    const script = `import { openDatabase } from '${join(import.meta.dir, '../../src/db')}'; openDatabase(process.argv[2]).close()`
    const file = join(dir, 'open.ts')
    await Bun.write(file, script)
    const runs = await Promise.all(Array.from({ length: 4 }, () => Bun.spawn([process.execPath, file, path], { stderr: 'pipe' })).map(async (child) => ({ code: await child.exited, errors: await new Response(child.stderr).text() })))
    expect(runs.map((run) => run.errors.trim())).toEqual(['', '', '', ''])
    expect(runs.map((run) => run.code)).toEqual([0, 0, 0, 0])
    const db = new Database(path, { readonly: true })
    expect(db.query('SELECT count(*) AS n FROM schema_migrations').get()).toEqual({ n: MIGRATIONS.length })
    db.close()
  })
})
