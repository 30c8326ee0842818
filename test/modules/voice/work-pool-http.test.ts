import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { type WorkKind, workKind, type WorkPool } from '../../../src/core/work-pool'
import { fetchAudio, makeVoiceServer } from './helpers'

setDefaultTimeout(60_000)
const fixture = (name: string) => new URL(`../../fixtures/work/${name}.work.ts`, import.meta.url).href
const BLOCK = workKind<{ ms: number }, number>('block', fixture('block'))
const CRASH = workKind<Record<string, never>, never>('crash', fixture('crash'))
const TEXT = 'The backup finished at noon. Every file was copied to the second disk.'

/** A TTS text of `crash now` runs the crash kind instead: the worker taking the request dies, as a native crash would end it. */
function crashOnCue(pool: WorkPool) {
  const run = pool.run.bind(pool)
  pool.run = ((kind: WorkKind<any, any>, payload: any, options: any) =>
    kind.name === 'tts' && payload.text === 'crash now' ? run(CRASH, {}, options) : run(kind, payload, options)) as WorkPool['run']
}

const logged: string[] = []
const servers = [
  makeVoiceServer({ workers: 1, workQueue: 1, log: (line) => logged.push(line) }, (services) => crashOnCue(services.pool)),
]
afterAll(() => servers.forEach((server) => server.cleanup()))
const [server] = servers as [(typeof servers)[0]]

async function until(check: () => boolean) {
  const deadline = Date.now() + 5000
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await Bun.sleep(5)
  }
}

const tts = (token: string, text = TEXT, init: RequestInit = {}) =>
  server.app.handle(
    new Request('http://localhost/voice/tts', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text, voice: 'default', language: 'en-US', speed: 1, format: 'mp3' }),
      ...init,
    }),
  )

test('the pool starts lazily: /health shows no worker until work comes, then the one that did it', async () => {
  const health = await server.call('GET', '/health')
  expect(health.status).toBe(200)
  expect(health.json.workers).toEqual({ size: 1, started: 0, busy: 0, queued: 0, queueLimit: 1, completed: 0, failed: 0, crashed: 0, cancelled: 0, heapBytes: 0 })
  const { accessToken } = await server.login()
  expect((await tts(accessToken)).status).toBe(200)
  await Bun.sleep(300) // /health is re-probed at most every 250 ms
  const after = await server.call('GET', '/health')
  expect(after.json.workers).toMatchObject({ started: 1, busy: 0, completed: 1 })
  expect(after.json.workers.heapBytes).toBeGreaterThan(0)
})

test('a full queue: POST /voice/tts is 503 BUSY with Retry-After, at once; once the pool has room it speaks again', async () => {
  const { accessToken } = await server.login()
  const hold = new AbortController()
  const running = server.services.pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
  const waiting = server.services.pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
  await until(() => server.services.pool.state().queued === 1)
  const started = performance.now()
  const refused = await tts(accessToken)
  expect(performance.now() - started).toBeLessThan(1000)
  expect(refused.status).toBe(503)
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  const body = (await refused.json()) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, code: 'BUSY' })
  expect(String(body.message)).toContain('busy')
  // No audio was reserved or kept for it.
  const files = readdirSync(server.audioDir).length
  hold.abort()
  expect([await running, await waiting]).toEqual(['stopped', 'stopped'])
  const ok = await tts(accessToken)
  expect(ok.status).toBe(200)
  expect(readdirSync(server.audioDir).length).toBe(files + 1)
})

test('a client that goes away stops its synthesis: the worker is stopped, no audio is kept, the next request is served', async () => {
  const { accessToken } = await server.login()
  const records = () => server.services.db.query<{ n: number }, []>('SELECT count(*) AS n FROM voice_audio').get()!.n
  const listening = server.app.listen({ port: 0, hostname: '127.0.0.1' })
  try {
    const before = server.services.pool.state().cancelled
    const files = readdirSync(server.audioDir).length
    const recorded = records()
    const client = new AbortController()
    const long = 'The harbour office opens at six in the morning, and the keys are kept by the duty officer. '.repeat(50).slice(0, 5000)
    const request = fetch(`http://127.0.0.1:${listening.server!.port}/voice/tts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: long, voice: 'default', language: 'en-US', speed: 1, format: 'ogg' }),
      signal: client.signal,
    }).catch((error) => (error as Error).name)
    await until(() => server.services.pool.state().busy === 1)
    client.abort()
    expect(await request).toBe('AbortError')
    await until(() => server.services.pool.state().cancelled === before + 1)
    expect(server.services.pool.state()).toMatchObject({ busy: 0, started: 0 })
    // The half-written file was removed, and no record points at it.
    await Bun.sleep(50)
    expect(readdirSync(server.audioDir).length).toBe(files)
    expect(records()).toBe(recorded)
    expect((await tts(accessToken)).status).toBe(200)
  } finally {
    await listening.stop(true)
  }
})

test('a worker that dies fails its own request with 500 INTERNAL_ERROR (logged); the pool replaces it and the next request is spoken', async () => {
  const { accessToken } = await server.login()
  const crashed = await tts(accessToken, 'crash now')
  expect(crashed.status).toBe(500)
  const body = (await crashed.json()) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, code: 'INTERNAL_ERROR' })
  expect(String(body.message)).toContain('crash task stopped (exit code 7)')
  expect(logged.some((line) => line.includes('while running a crash task'))).toBe(true)
  const next = await tts(accessToken)
  expect(next.status).toBe(200)
  const { response, bytes } = await fetchAudio(server.app, ((await next.json()) as { audioUrl: string }).audioUrl, accessToken)
  expect(response.status).toBe(200)
  expect(bytes[0]).toBe(0xff)
  expect(server.services.pool.state()).toMatchObject({ crashed: 1, started: 1 })
})

test('Prometheus shows the queue depth and the time of tasks by kind', async () => {
  const { accessToken } = await server.login()
  const metrics = await server.call('GET', '/metrics', { token: accessToken })
  expect(metrics.status).toBe(200)
  expect(metrics.text).toMatch(/^uagent_work_queue_depth(\{[^}]*\})? 0$/m)
  expect(metrics.text).toMatch(/^uagent_work_seconds_count\{kind="tts",outcome="ok"[^}]*\} [1-9]\d*$/m)
  expect(metrics.text).toMatch(/^uagent_work_seconds_count\{kind="crash",outcome="crashed"[^}]*\} 1$/m)
  expect(metrics.text).toMatch(/^uagent_work_seconds_count\{kind="tts",outcome="cancelled"[^}]*\} 1$/m)
  // The request whose client went away is recorded as nginx's 499 (client closed request), not a server failure.
  expect(metrics.text).toMatch(/^uagent_http_requests_total\{method="POST",route="\/voice\/tts",status="499"[^}]*\} 1$/m)
  expect(metrics.text).toMatch(/^uagent_http_requests_total\{method="POST",route="\/voice\/tts",status="500"[^}]*\} 1$/m)
})
