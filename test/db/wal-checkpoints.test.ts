import { describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { walCheckpoints } from '../../src/db/wal-checkpoints'
import { tempDir } from '../helpers'

describe('WAL checkpoints on a thread of their own', () => {
  test("commits stay in the WAL until the thread copies them into the database file; the server's own checkpoint is a backstop; closed, everything is there", async () => {
    const path = join(tempDir('db'), 'uagent.db')
    const db = openDatabase(path)
    const checkpoints = walCheckpoints(db)!
    expect(db.query<{ wal_autocheckpoint: number }, []>('PRAGMA wal_autocheckpoint').get()!.wal_autocheckpoint).toBe(16_384)
    db.run('CREATE TABLE filler (id INTEGER PRIMARY KEY, bytes BLOB)')
    const before = statSync(path).size
    // 2,000 pages of 4 KB, one commit each 100: past SQLite's default of 1,000 pages.
    const insert = db.query('INSERT INTO filler (bytes) VALUES (?)')
    for (let i = 0; i < 20; i++) db.transaction(() => { for (let j = 0; j < 100; j++) insert.run(new Uint8Array(4000).fill(j)) }).immediate()
    // The thread copies them into the file (PASSIVE, every 100 ms): the file grows by their size.
    const deadline = Date.now() + 20_000
    while (statSync(path).size < before + 8_000_000 && Date.now() < deadline) await Bun.sleep(50)
    expect(statSync(path).size).toBeGreaterThanOrEqual(before + 8_000_000)
    await checkpoints.close()
    db.close()
    const again = openDatabase(path)
    expect(again.query<{ n: number }, []>('SELECT count(*) AS n FROM filler').get()!.n).toBe(2_000)
    again.close()
  })

  test('an in-memory database has none', () => {
    const db = openDatabase(':memory:')
    expect(walCheckpoints(db)).toBeNull()
    db.close()
  })
})
