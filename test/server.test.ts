import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { readEventData } from '../src/core/sse-reader'
import { tempDir } from './helpers'

// The server as its own process, started the way `uagent serve` and scripts start it:
// plain `bun src/index.ts`, without Bun's --max-http-header-size flag.
const dataDir = tempDir('server')
const ADMIN = { email: 'process@example.com', password: 'process-password-1' }
let proc: ReturnType<typeof Bun.spawn> | null = null
let base = ''

beforeAll(async () => {
  const clean: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
  proc = Bun.spawn(['bun', join(import.meta.dir, '../src/index.ts')], {
    env: { ...clean, PORT: '0', UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server exited before listening: ${output}`)
    output += new TextDecoder().decode(value)
  }
  base = /listening on (http:\/\/\S+)/.exec(output)![1]!
})

afterAll(async () => {
  proc?.kill()
  await proc?.exited
  rmSync(dataDir, { recursive: true, force: true })
})

describe('the server process', () => {
  test('accepts a /stream message of the full 32,000 characters in its query string, and refuses one more with a 400', async () => {
    const login = (await (
      await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    ).json()) as { accessToken: string }
    const headers = { authorization: `Bearer ${login.accessToken}` }
    // Two bytes in UTF-8, six once percent-encoded: a 192 KB request line.
    const longest = await fetch(`${base}/stream?message=${encodeURIComponent('é'.repeat(32_000))}`, { headers })
    expect(longest.status).toBe(200)
    const types: string[] = []
    for await (const data of readEventData(longest.body!)) types.push(JSON.parse(data).type)
    expect(types[0]).toBe('start')
    expect(types.at(-1)).toBe('end')

    const tooLong = await fetch(`${base}/stream?message=${encodeURIComponent('é'.repeat(32_001))}`, { headers })
    expect(tooLong.status).toBe(400)
    expect(((await tooLong.json()) as { code: string }).code).toBe('VALIDATION_ERROR')
  })
})
