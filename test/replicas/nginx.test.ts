import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN, makeServerWith, openSocket, ScriptedGenerator } from '../helpers'
import { freePort } from '../redis'

// deploy/nginx/uagent.conf, as deployed, in front of two servers on this machine.
const NGINX = Bun.which('nginx') ?? (Bun.file('/usr/sbin/nginx').size ? '/usr/sbin/nginx' : null)
const suite = NGINX ? describe : describe.skip
const config = readFileSync(join(import.meta.dir, '../../deploy/nginx/uagent.conf'), 'utf8')

suite(NGINX ? 'deploy/nginx/uagent.conf in front of two servers' : 'deploy/nginx/uagent.conf (skipped: nginx is not installed)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'uagent-nginx-'))
  // Ten words, 150 ms apart: a stream that takes 1.5 s to make.
  const generator = new ScriptedGenerator('one two three four five six seven eight nine ten', 150)
  // Two servers on one SQLite file: a session made through one is known to the other.
  const replicas = ['replica-1', 'replica-2'].map((name) =>
    makeServerWith(generator, { database: join(dir, 'uagent.db'), dataDir: dir, env: { UAGENT_INSTANCE_ID: name }, metricsToken: 'scrape-token-123456', jwtSecret: 's'.repeat(40) }),
  )
  const listening = replicas.map((replica) => replica.app.listen({ port: 0, hostname: '127.0.0.1' }))
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  let nginx: Bun.Subprocess
  let token = ''

  beforeAll(async () => {
    const upstreams = listening.map((app) => `    server 127.0.0.1:${app.server!.port} max_fails=1 fail_timeout=5s;`).join('\n')
    const site = config
      .replace(/^\s*server replica:3000[^\n]*$/m, upstreams)
      .replace('listen 80;', `listen 127.0.0.1:${port};`)
    expect(site).not.toContain('replica:3000')
    writeFileSync(join(dir, 'site.conf'), site)
    writeFileSync(
      join(dir, 'nginx.conf'),
      `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n  include ${dir}/site.conf;\n}\n`,
    )
    nginx = Bun.spawn([NGINX!, '-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdout: 'ignore', stderr: 'pipe' })
    for (let tries = 0; tries < 100; tries++) {
      try {
        if ((await fetch(`${base}/health`)).ok) break
      } catch {}
      await Bun.sleep(50)
    }
    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    expect(login.status).toBe(200)
    token = ((await login.json()) as { accessToken: string }).accessToken
  })
  afterAll(() => {
    nginx?.kill()
    for (const app of listening) app.stop(true)
    rmSync(dir, { recursive: true, force: true })
  })

  test('requests are spread over both replicas', async () => {
    for (let i = 0; i < 20; i++) expect((await fetch(`${base}/health`)).status).toBe(200)
    for (const replica of replicas) {
      await replica.services.recorder.settle()
      const metrics = await replica.call('GET', '/metrics', { token: 'scrape-token-123456' })
      const health = /uagent_http_requests_total\{method="GET",route="\/health",status="200",instance="replica-\d"\} (\d+)/.exec(metrics.text)
      expect(Number(health?.[1] ?? 0)).toBeGreaterThan(0)
    }
  })

  test('a server-sent event stream passes through unbuffered: the first event arrives long before the last', async () => {
    const started = performance.now()
    const response = await fetch(`${base}/stream?message=${encodeURIComponent('count to ten')}`, { headers: { authorization: `Bearer ${token}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    let firstChunkAt: number | null = null
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value)
      if (firstChunkAt === null && text.includes('"type":"chunk"')) firstChunkAt = performance.now() - started
    }
    const endAt = performance.now() - started
    expect(text).toContain('"type":"end"')
    expect(firstChunkAt).not.toBeNull()
    // The words are made over 1.5 s: a buffering proxy would hand them over together at the end.
    expect(endAt - firstChunkAt!).toBeGreaterThan(800)
  })

  test('a WebSocket chat passes through the upgrade', async () => {
    const { socket, next } = await openSocket(`ws://127.0.0.1:${port}/ws`)
    socket.send(JSON.stringify({ type: 'auth', token }))
    expect((await next('auth_success')).type).toBe('auth_success')
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello' }))
    expect((await next('stream_chunk')).type).toBe('stream_chunk')
    const reply = await next('chat_response')
    expect(reply.data.response).toBe('one two three four five six seven eight nine ten')
    socket.close()
  })

  test('with one replica gone, every request is still answered by the other', async () => {
    listening[0]!.stop(true)
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await fetch(`${base}/health`)).status)
    expect(statuses).toEqual(new Array(10).fill(200))
  })
})
