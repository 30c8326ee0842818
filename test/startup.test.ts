import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync, existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createServices } from '../src/app'
import { ADMIN, tempDir } from './helpers'

const ENTRY = join(import.meta.dir, '../src/index.ts')

/** Starts the server as `bun run start` would, and waits for it to stop (a healthy one is stopped after it listens). */
async function start(dataDir: string, extra: Record<string, string> = {}) {
  const clean: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
  const proc = Bun.spawn(['bun', ENTRY], {
    env: { ...clean, PORT: '0', UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password, ...extra },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill(), 15_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/**
 * A data dir with a real database (some rows in it) and its key, as a server leaves it. Made in a
 * process of its own that then ends, so that no connection of this test process stays open on it.
 */
function populated(): string {
  const dataDir = tempDir('startup')
  const script = `
    import { createServices } from ${JSON.stringify(join(import.meta.dir, '../src/app.ts'))}
    const services = createServices({ dataDir: process.argv[1], adminEmail: ${JSON.stringify(ADMIN.email)}, adminPassword: ${JSON.stringify(ADMIN.password)}, analyticsEnabled: false, env: {}, log: () => {} })
    services.db.run('CREATE TABLE ballast (x BLOB)')
    for (let i = 0; i < 200; i++) services.db.run('INSERT INTO ballast VALUES (randomblob(4000))')
    services.plugins.close()
    services.db.close()
    process.exit(0)
  `
  const result = Bun.spawnSync(['bun', '-e', script, dataDir], { stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`populating failed: ${result.stderr.toString()}`)
  return dataDir
}

const bytes = (file: string) => (existsSync(file) ? Bun.hash(readFileSync(file)) : null)

function expectOneClearLine(result: { code: number; stderr: string }, ...parts: string[]) {
  expect(result.code).not.toBe(0)
  for (const part of parts) expect(result.stderr).toContain(part)
  expect(result.stderr).not.toMatch(/^\s+at /m)
  expect(result.stderr).not.toContain('SQLiteError')
}

describe('start-up faults stop the server with one clear message and leave the files as they were', () => {
  test('a truncated database: names the file, SQLite’s word for the damage, how to restore', async () => {
    const dataDir = populated()
    const file = join(dataDir, 'uagent.db')
    truncateSync(file, Math.floor(statSync(file).size / 2))
    const before = bytes(file)
    const result = await start(dataDir)
    expectOneClearLine(result, file, 'damaged', 'uagent admin restore')
    expect(bytes(file)).toBe(before)
    expect(existsSync(`${file}-wal`)).toBe(false)
  })

  test('a file that is not a database at all', async () => {
    const dataDir = populated()
    const file = join(dataDir, 'uagent.db')
    writeFileSync(file, 'this is not a database, just some text that replaced it'.repeat(100))
    const before = bytes(file)
    const result = await start(dataDir)
    expectOneClearLine(result, file, 'damaged', 'not a database')
    expect(bytes(file)).toBe(before)
  })

  test('a schema from a newer version of the server', async () => {
    const dataDir = populated()
    const file = join(dataDir, 'uagent.db')
    const db = new Database(file)
    db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', '2030-01-01')")
    db.close()
    const before = bytes(file)
    const result = await start(dataDir)
    expectOneClearLine(result, file, 'newer version', 'schema version 999')
    expect(bytes(file)).toBe(before)
  })

  test('a key file that cannot be read', async () => {
    const dataDir = populated()
    const key = join(dataDir, 'jwt-secret')
    const database = bytes(join(dataDir, 'uagent.db'))
    // A folder where the key file should be cannot be read as one, whoever runs the test (root included).
    rmSync(key)
    mkdirSync(key)
    const result = await start(dataDir)
    expectOneClearLine(result, key, 'cannot be read')
    expect(statSync(key).isDirectory()).toBe(true)
    expect(bytes(join(dataDir, 'uagent.db'))).toBe(database)
  })

  test('a missing key file beside an existing database', async () => {
    const dataDir = populated()
    const key = join(dataDir, 'jwt-secret')
    rmSync(key)
    const result = await start(dataDir)
    expectOneClearLine(result, key, 'is missing', 'UAGENT_JWT_SECRET')
    expect(existsSync(key)).toBe(false)
  })

  test('a data dir that cannot be written', async () => {
    const parent = tempDir('startup-file')
    const notADir = join(parent, 'data')
    writeFileSync(notADir, 'a file where the data dir should be')
    const result = await start(notADir)
    expectOneClearLine(result, notADir, 'cannot be written')
    expect(readFileSync(notADir, 'utf8')).toBe('a file where the data dir should be')
  })

  test('a sound data dir still starts (the checks refuse nothing that is fine)', async () => {
    const dataDir = populated()
    const clean: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
    const proc = Bun.spawn(['bun', ENTRY], { env: { ...clean, PORT: '0', UAGENT_DATA_DIR: dataDir }, stdout: 'pipe', stderr: 'pipe' })
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    let output = ''
    while (!output.includes('listening on')) {
      const { value, done } = await reader.read()
      if (done) break
      output += new TextDecoder().decode(value)
    }
    proc.kill()
    await proc.exited
    expect(output).toContain('listening on')
  })
})
