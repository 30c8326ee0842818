import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { pluginFiles, pluginToolsMissing, tgzOf } from '../modules/plugins/fixtures'
import { POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { openSocket } from '../helpers'
import { REDIS_SERVER, REDIS_SKIPPED } from '../redis'
import { type Cluster, CLUSTER_ADMIN, type Replica, startCluster, within } from './cluster'

// Real server processes on one PostgreSQL and one Redis, on a shared machine.
setDefaultTimeout(60_000)

const missing = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null
const suite = missing ? describe.skip : describe
const titled = (title: string) => (missing ? `${title} (${missing})` : title)

suite(titled('two replicas on one PostgreSQL and one Redis, each with an empty data dir, started at the same moment'), () => {
  let cluster: Cluster
  let a: Replica
  let b: Replica
  let admin = ''

  const login = async (replica: Replica, email = CLUSTER_ADMIN.email, password = CLUSTER_ADMIN.password) => {
    const answer = await replica.call('POST', '/auth/login', { body: { email, password } })
    expect(answer.status).toBe(200)
    return answer.json as { accessToken: string; refreshToken: string; sessionId: string; user: { id: string } }
  }
  let users = 0
  /** A new plain user, made on one replica. */
  const newUser = async (replica: Replica) => {
    const email = `user${++users}-${crypto.randomUUID().slice(0, 8)}@replicas.test`
    const made = await replica.call('POST', '/auth/users', { token: admin, body: { email, password: 'user-password-1', roles: ['user'] } })
    expect(made.status).toBe(200)
    return { email, password: 'user-password-1' }
  }

  beforeAll(async () => {
    cluster = await startCluster(2, { UAGENT_RATE_LIMIT_MAX: '60', UAGENT_RATE_LIMIT_WINDOW: '60' })
    ;[a, b] = cluster.replicas as [Replica, Replica]
    admin = (await login(a)).accessToken
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  test('both report PostgreSQL and Redis connected, and one first admin exists', async () => {
    for (const replica of [a, b]) {
      const health = await replica.call('GET', '/health')
      expect(health.json.connections).toMatchObject({ postgres: 'connected', redis: 'connected' })
    }
    const listed = await b.call('GET', '/auth/users', { token: admin })
    expect(listed.status).toBe(200)
    expect(JSON.stringify(listed.json).split(CLUSTER_ADMIN.email).length - 1).toBe(1)
  })

  test('a token from one works on the other', async () => {
    const user = await newUser(a)
    const session = await login(a, user.email, user.password)
    const me = await b.call('GET', '/auth/me', { token: session.accessToken })
    expect(me.status).toBe(200)
    expect(JSON.stringify(me.json)).toContain(user.email)
  })

  test('a logout on one is refused by the other within 1 s', async () => {
    const user = await newUser(b)
    const session = await login(b, user.email, user.password)
    expect((await a.call('GET', '/auth/me', { token: session.accessToken })).status).toBe(200)
    expect((await b.call('POST', '/auth/logout', { token: session.accessToken })).status).toBeLessThan(300)
    const took = await within(1000, async () => (await a.call('GET', '/auth/me', { token: session.accessToken })).status === 401)
    expect(took).not.toBeNull()
  })

  test('80 requests spread over both with a window of 60: about 20 are 429', async () => {
    const user = await newUser(a)
    const session = await login(b, user.email, user.password)
    const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).call('GET', '/auth/me', { token: session.accessToken })))
    const limited = answers.filter((answer) => answer.status === 429).length
    expect(limited).toBeGreaterThanOrEqual(18)
    expect(limited).toBeLessThanOrEqual(22)
    expect(answers.filter((answer) => answer.status === 200).length + limited).toBe(80)
  })

  test('a document ingested on one is found by a search on the other within 2 s; a delete likewise', async () => {
    const collection = `handbook-${crypto.randomUUID().slice(0, 8)}`
    const ingest = await a.call('POST', '/rag/ingest', {
      token: admin,
      body: { collection, documents: [{ id: 'retention', content: 'Harbor keeps daily snapshots for a week. Change this with keep-daily in harbor.conf, then run harbor prune.' }] },
    })
    expect(ingest.status).toBe(200)
    const search = () => b.call('POST', '/rag/search', { token: admin, body: { collection, query: 'keep-daily harbor prune', limit: 3 } })
    expect(await within(2000, async () => (await search()).json?.results?.some((result: { id: string }) => result.id.startsWith('retention')) ?? false)).not.toBeNull()
    const removed = await a.call('DELETE', `/rag/collections/${collection}/documents/retention`, { token: admin })
    expect(removed.status).toBeLessThan(300)
    expect(await within(2000, async () => !((await search()).json?.results ?? []).some((result: { id: string }) => result.id.startsWith('retention')))).not.toBeNull()
  })

  test('an async agent task queued on one completes and is read on the other', async () => {
    const queued = await a.call('POST', '/agents/execute', { token: admin, body: { task: 'Write a short plan for a team offsite in Lisbon', agents: ['planner', 'writer'], async: true } })
    expect(queued.status).toBe(202)
    const taskId = queued.json.taskId as string
    let last: any
    const took = await within(30_000, async () => {
      last = (await b.call('GET', `/agents/task/${taskId}`, { token: admin })).json
      return last?.status === 'completed' || last?.status === 'failed'
    })
    expect(took).not.toBeNull()
    expect(last.status).toBe('completed')
    expect(last.results.length).toBeGreaterThan(0)
  })

  test('audio made on one is fetched from the other', async () => {
    const made = await a.call('POST', '/voice/tts', { token: admin, body: { text: 'Hello from the first replica.', voice: 'default', language: 'en-US', speed: 1, format: 'wav' } })
    expect(made.status).toBe(200)
    const response = await fetch(`${b.base}${made.json.audioUrl}`, { headers: { authorization: `Bearer ${admin}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('audio/wav')
    const bytes = new Uint8Array(await response.arrayBuffer())
    expect(bytes.byteLength).toBe(made.json.size)
    expect(new TextDecoder().decode(bytes.slice(0, 4))).toBe('RIFF')
  })

  test.skipIf(pluginToolsMissing() !== null)('a plugin installed on one runs on the other', async () => {
    const archive = tgzOf(pluginFiles('replica-adder', { add: `({ a, b }) => ({ sum: a + b })` }))
    const files = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(archive as BodyInit) })
    try {
      const sha256 = createHash('sha256').update(archive).digest('hex')
      const installed = await a.call('POST', '/plugins/install', { token: admin, body: { source: 'url', package: `http://127.0.0.1:${files.port}/replica-adder.tgz`, version: '1.0.0', sha256 } })
      expect(installed.status).toBe(200)
      const listed = await b.call('GET', '/plugins', { token: admin })
      expect(listed.json.plugins.map((plugin: { name: string }) => plugin.name)).toContain('replica-adder')
      const ran = await b.call('POST', '/plugins/replica-adder/execute', { token: admin, body: { action: 'add', parameters: { a: 2, b: 40 } } })
      expect(ran.status).toBe(200)
      expect(ran.json.result).toEqual({ sum: 42 })
    } finally {
      files.stop(true)
    }
  })

  test('analytics on one count requests made on the other', async () => {
    // A route only this test calls, and only on B.
    const onB = async () => {
      const exported = await a.call('GET', '/analytics/export?format=json&timeRange=1h', { token: admin })
      expect(exported.status).toBe(200)
      return (exported.json as { route: string }[]).filter((record) => record.route === '/voice/voices').length
    }
    const before = await onB()
    for (let i = 0; i < 5; i++) expect((await b.call('GET', '/voice/voices', { token: admin })).status).toBe(200)
    expect(await within(10_000, async () => (await onB()) === before + 5)).not.toBeNull()
  })

  test('a WebSocket chat on one with a token from the other', async () => {
    const token = (await login(b)).accessToken
    const { socket, next } = await openSocket(a.ws)
    socket.send(JSON.stringify({ type: 'auth', token }))
    expect((await next('auth_success')).type).toBe('auth_success')
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'Hello over the socket' }))
    const reply = await next('chat_response')
    expect(reply.type).toBe('chat_response')
    expect(reply.data.response.length).toBeGreaterThan(0)
    socket.close()
    const conversation = await b.call('GET', `/conversations/${reply.data.metadata.conversationId}`, { token })
    expect(conversation.status).toBe(200)
  })
})

suite(titled('two replicas under chat load, one killed with SIGKILL'), () => {
  let cluster: Cluster
  let a: Replica
  let b: Replica
  const login = async (replica: Replica) => {
    const answer = await replica.call('POST', '/auth/login', { body: CLUSTER_ADMIN })
    expect(answer.status).toBe(200)
    return answer.json as { accessToken: string }
  }

  beforeAll(async () => {
    cluster = await startCluster(2, { UAGENT_RATE_LIMIT_MAX: '1000000' })
    ;[a, b] = cluster.replicas as [Replica, Replica]
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  test('one replica killed with SIGKILL under chat load on both: every acknowledged chat is stored, and the survivor answers every request', async () => {
    const token = (await login(a)).accessToken
    const acknowledged: string[] = []
    const survivorFailures: string[] = []
    let stop = false
    const load = async (replica: Replica, survivor: boolean, worker: number) => {
      for (let i = 0; !stop; i++) {
        const message = `load ${replica.name} ${worker} ${i}`
        try {
          const answer = await replica.call('POST', '/chat', { token, body: { message } })
          if (answer.status === 200) acknowledged.push(answer.json.metadata.conversationId)
          else if (survivor) survivorFailures.push(`${answer.status} ${answer.text}`)
        } catch (error) {
          if (survivor) survivorFailures.push(String(error))
          else return
        }
      }
    }
    const running = [0, 1, 2].flatMap((worker) => [load(a, false, worker), load(b, true, worker)])
    await Bun.sleep(1500)
    a.proc.kill('SIGKILL')
    await a.proc.exited
    await Bun.sleep(1500)
    stop = true
    await Promise.all(running)
    expect(survivorFailures).toEqual([])
    expect(acknowledged.length).toBeGreaterThan(10)
    const stored = new Set<string>()
    for (let offset = 0; ; offset += 100) {
      const page = (await b.call('GET', `/conversations?limit=100&offset=${offset}`, { token })).json
      for (const conversation of page.conversations) stored.add(conversation.id)
      if (!page.hasMore) break
    }
    for (const id of acknowledged) expect(stored.has(id)).toBe(true)
  })
})
