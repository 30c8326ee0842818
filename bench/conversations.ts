// Chat for every day (issue 57): searching conversations (GET /conversations?q=) at 10,000
// conversations of 100 messages (1,000,000 messages) on SQLite and on PostgreSQL, p50/p95 per kind
// of query; and sending a message (POST /chat into a conversation of ~100 messages) with the
// search indexes and the files look-up, beside today's path in the same run (the same database
// with the full-text index maintenance — migration 080's and 082's triggers, the GIN index — and the per-message look-ups switched off). The generator
// is a fixed reply, so what is measured is the server's own work. In-process (app.handle).
// BENCH_CONV_COUNT / BENCH_CONV_MESSAGES change the corpus, BENCH_CONV_SKIP_SQLITE=1 runs PostgreSQL's part only; PostgreSQL needs UAGENT_TEST_DATABASE_URL. BENCH_KEEP_DATABASE=1 keeps the SQLite data folder and the PostgreSQL scratch database.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { buildApp, createServices, type Services } from '../src/app'
import type { Postgres } from '../src/db/postgres'
import { toPgText } from '../src/db/pg-text'
import type { ChatMessage, Generator } from '../src/ml'
import { ensureFirstAdmin } from '../src/modules/auth/bootstrap'
import { ChatService } from '../src/modules/chat/service'
import { CONVERSATION_DOCUMENT } from '../src/modules/conversations/store.sqlite'
import { BENCH_DATABASE_SKIPPED, scratchPostgres } from './postgres-database'

const CONVERSATIONS = Number(process.env.BENCH_CONV_COUNT ?? 10_000)
const MESSAGES = Number(process.env.BENCH_CONV_MESSAGES ?? 100)
const QUERIES = 60
const SENDS = 320
const ADMIN = { email: 'bench-conv@example.com', password: 'bench-password-1' }

/** A deterministic generator of numbers in [0, 1) (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** 20,000 made-up words of 2 to 4 syllables, used with Zipf frequencies (rank r: 1/r), as words are. */
const rand = random(57)
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'dul', 'sen', 'pra', 'gi', 'mor', 'fe', 'zan', 'qui', 'bel', 'tor', 'nu', 'ash', 'ples', 'cor']
const VOCABULARY: string[] = []
for (const seen = new Set<string>(); VOCABULARY.length < 20_000; ) {
  const word = Array.from({ length: 2 + Math.floor(rand() * 3) }, () => SYLLABLES[Math.floor(rand() * SYLLABLES.length)]).join('')
  if (!seen.has(word)) (seen.add(word), VOCABULARY.push(word))
}
const CUMULATIVE = (() => {
  const weights = VOCABULARY.map((_, rank) => 1 / (rank + 1))
  const total = weights.reduce((a, b) => a + b, 0)
  let sum = 0
  return weights.map((w) => (sum += w / total))
})()
function word(): string {
  const x = rand()
  let lo = 0
  let hi = CUMULATIVE.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (CUMULATIVE[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return VOCABULARY[lo]!
}
const sentence = (n: number) => Array.from({ length: n }, word).join(' ')

class FixedReply implements Generator {
  readonly id = 'bench/fixed'
  readonly contextLength = 8192
  async countTokens(text: string) {
    return Math.ceil(text.length / 4)
  }
  async generate() {
    return { text: 'Noted: the ferry leaves at nine.', promptTokens: 1, completionTokens: 8, finishReason: 'stop' as const }
  }
  async *stream(_messages: ChatMessage[]) {
    yield 'Noted: the ferry leaves at nine.'
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

interface Corpus {
  userId: string
  ids: string[]
}

/** The corpus, written straight to the tables in large transactions (as a copy would). */
async function load(services: Services, postgres: Postgres | undefined, userId: string): Promise<Corpus> {
  const ids: string[] = []
  const started = Date.UTC(2026, 0, 1)
  const batch: { conversation: string; title: string; at: string; messages: string[] }[] = []
  const flush = async () => {
    if (!batch.length) return
    if (postgres) {
      await postgres`INSERT INTO conversations (id, user_id, title, created_at, updated_at)
        SELECT id, ${userId}, title, at, at FROM unnest(${batch.map((c) => c.conversation)}::text[], ${batch.map((c) => toPgText(c.title))}::text[], ${batch.map((c) => c.at)}::text[]) AS b(id, title, at)`
      const rows = batch.flatMap((c) => c.messages.map((content, i) => ({ c: c.conversation, role: i % 2 ? 'assistant' : 'user', content: toPgText(content), at: c.at })))
      await postgres`INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at)
        SELECT c, gen_random_uuid()::text, role, content, 10, CASE WHEN role = 'assistant' THEN '{"model":"bench/fixed"}' END, at
        FROM unnest(${rows.map((r) => r.c)}::text[], ${rows.map((r) => r.role)}::text[], ${rows.map((r) => r.content)}::text[], ${rows.map((r) => r.at)}::text[]) AS m(c, role, content, at)`
    } else {
      const db = services.db
      const conversation = db.prepare('INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)')
      const message = db.prepare('INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at) VALUES (?, ?, ?, ?, 10, ?, ?)')
      db.transaction(() => {
        for (const c of batch) {
          conversation.run(c.conversation, userId, c.title, c.at, c.at)
          c.messages.forEach((content, i) => message.run(c.conversation, randomUUID(), i % 2 ? 'assistant' : 'user', content, i % 2 ? '{"model":"bench/fixed"}' : null, c.at))
        }
      })()
    }
    batch.length = 0
  }
  for (let n = 0; n < CONVERSATIONS; n++) {
    const id = randomUUID()
    ids.push(id)
    const messages = Array.from({ length: MESSAGES }, (_, i) => sentence(i % 2 ? 30 + Math.floor(rand() * 40) : 8 + Math.floor(rand() * 16)))
    batch.push({ conversation: id, title: messages[0]!.slice(0, 80), at: new Date(started + n * 60_000).toISOString(), messages })
    if (batch.length === 200) await flush()
  }
  await flush()
  return { userId, ids }
}

/** Searches by kind of word: its rank in the vocabulary sets how many messages hold it. */
function queries(): { kind: string; q: string }[] {
  const pick = (from: number, to: number) => VOCABULARY[from + Math.floor(rand() * (to - from))]!
  const list: { kind: string; q: string }[] = []
  for (let i = 0; i < QUERIES; i++) {
    list.push({ kind: 'rare word (rank 10k-20k)', q: pick(10_000, 20_000) })
    list.push({ kind: 'medium word (rank 1k-2k)', q: pick(1_000, 2_000) })
    list.push({ kind: 'common word (rank 50-100)', q: pick(50, 100) })
    list.push({ kind: 'two medium words', q: `${pick(500, 2_000)} ${pick(500, 2_000)}` })
  }
  return list
}

async function run(backend: 'SQLite' | 'PostgreSQL', postgres?: Postgres) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-conv-'))
  const services = createServices({
    env: {},
    dataDir,
    ...(postgres ? { postgres } : {}),
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    rateLimitMax: 1_000_000_000,
    analyticsEnabled: false,
    log: () => {},
  })
  const generator = new FixedReply()
  services.chat = new ChatService({ conversations: services.conversations, generator: async () => generator, userExists: async (id) => (await services.auth.getUser(id)) !== null })
  const app = buildApp(services)
  await ensureFirstAdmin(services.auth, services.config, services.log)
  // The scratch PostgreSQL database already has a user (`bench`, postgres-database.ts): no first admin is made there.
  if (postgres) await services.auth.createUser(ADMIN.email, ADMIN.password, ['admin'])
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined }),
    )
    const text = await response.text()
    return { status: response.status, text }
  }
  let login: { accessToken: string; user: { id: string } } | null = null
  for (let attempt = 0; attempt < 50 && !login; attempt++) {
    const response = await app.handle(new Request('http://localhost/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) }))
    if (response.ok) login = (await response.json()) as typeof login
    else await Bun.sleep(100)
  }
  const token = login!.accessToken
  const loading = performance.now()
  if (postgres) await postgres`DROP INDEX message_words_search`
  const corpus = await load(services, postgres, login!.user.id)
  if (postgres) {
    // The messages' words (migration 084), as the migration makes them, the index made after (faster than kept row by row).
    await postgres`INSERT INTO message_words (message_id, conversation_id, words) SELECT id, conversation_id, to_tsvector('simple', content) FROM messages`
    await postgres`CREATE INDEX message_words_search ON message_words USING gin (words)`
    // The conversations' words (migrations 082, 084), as the migrations make them, the index made after.
    await postgres`DROP INDEX conversation_words_search`
    await postgres`INSERT INTO conversation_words (conversation_id, user_id, updated_at, words, title_words)
      SELECT id, user_id, updated_at, conversation_words_of(id), to_tsvector('simple', title) FROM conversations`
    await postgres`UPDATE conversations SET words_stale = false`
    await postgres`CREATE INDEX conversation_words_search ON conversation_words USING gin (words)`
    await postgres`VACUUM ANALYZE message_words`
    await postgres`VACUUM ANALYZE conversation_words`
    await postgres`VACUUM ANALYZE messages`
    await postgres`VACUUM ANALYZE conversations`
  } else {
    // The messages' index, as migration 082 leaves it to the next search (made here at once, as a server's after a while).
    services.db.run('INSERT INTO messages_fts(rowid, content, conversation_id) SELECT id, content, conversation_id FROM messages')
    services.db.run('UPDATE search_progress SET messages_through = (SELECT max(id) FROM messages)')
    services.db.run("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
    // The conversations' words (migration 082), as the migration makes them.
    services.db.run(`INSERT INTO conversation_words(rowid, words) SELECT k.n, ${CONVERSATION_DOCUMENT('k.conversation_id')} FROM conversation_search_keys k`)
    services.db.run('UPDATE conversation_search_keys SET stale = 0, user_id = c.user_id, updated_at = c.updated_at FROM conversations c WHERE c.id = conversation_search_keys.conversation_id')
    services.db.run("INSERT INTO conversation_words(conversation_words) VALUES ('optimize')")
    services.db.run('ANALYZE')
  }
  console.log(`${backend}: ${CONVERSATIONS.toLocaleString()} conversations × ${MESSAGES} messages loaded in ${((performance.now() - loading) / 1000).toFixed(0)} s`)

  // Search: a first pass warms the caches (and on PostgreSQL the pool's connections), then the measured one.
  const list = queries()
  for (const { q } of list.slice(0, 40)) await call('GET', `/conversations?q=${encodeURIComponent(q)}&limit=20`, token)
  const times = new Map<string, number[]>()
  const found = new Map<string, number[]>()
  for (const { kind, q } of list) {
    const start = performance.now()
    const res = await call('GET', `/conversations?q=${encodeURIComponent(q)}&limit=20`, token)
    const ms = performance.now() - start
    if (res.status !== 200) throw new Error(`search ${q}: ${res.status} ${res.text.slice(0, 200)}`)
    times.set(kind, [...(times.get(kind) ?? []), ms])
    found.set(kind, [...(found.get(kind) ?? []), JSON.parse(res.text).total])
  }
  const all = [...times.values()].flat()
  for (const [kind, ms] of times) {
    const totals = found.get(kind)!
    console.log(
      `  search ${kind.padEnd(28)} p50 ${percentile(ms, 0.5).toFixed(1).padStart(6)} ms  p95 ${percentile(ms, 0.95).toFixed(1).padStart(6)} ms  (matching conversations: median ${percentile(totals, 0.5)})`,
    )
  }
  const p95 = percentile(all, 0.95)
  console.log(`  search, all ${all.length} queries (limit 20, each with its messages): p50 ${percentile(all, 0.5).toFixed(1)} ms  p95 ${p95.toFixed(1)} ms   goal <= 30 ms  ${p95 <= 30 ? 'ok' : 'MISSED'}`)

  // Sending: now, and today's path (no search index kept, no files look-up, no access check), alternated.
  const send = async () => {
    const id = corpus.ids[Math.floor(rand() * corpus.ids.length)]!
    const start = performance.now()
    const res = await call('POST', '/chat', token, { message: `${sentence(12)}?`, conversationId: id })
    if (res.status !== 200) throw new Error(`chat: ${res.status} ${res.text.slice(0, 200)}`)
    return performance.now() - start
  }
  const savedFiles = services.chat.files
  const savedAccess = services.chat.conversationAccess
  const triggers = postgres ? [] : services.db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND (name LIKE '%fts%' OR name LIKE 'conversation_words%')").all()
  const now: number[] = []
  const before: number[] = []
  for (let i = 0; i < 10; i++) await send()
  // Today's path: the same sends without what issue 57 added to them.
  const switchOff = async () => {
    services.chat.files = null
    services.chat.conversationAccess = null
    if (postgres) {
      // What a send does for search on PostgreSQL (migrations 082, 084): the trigger marking its conversation stale, and the partial index of stale conversations.
      await postgres`DROP TRIGGER IF EXISTS conversations_words_stale ON conversations`
      await postgres`DROP INDEX IF EXISTS conversations_words_stale`
    } else for (const { name } of triggers) services.db.run(`DROP TRIGGER ${name}`)
  }
  const switchOn = async () => {
    services.chat.files = savedFiles
    services.chat.conversationAccess = savedAccess
    if (postgres) {
      await postgres`CREATE INDEX conversations_words_stale ON conversations (user_id) WHERE words_stale`
      await postgres`CREATE TRIGGER conversations_words_stale BEFORE UPDATE OF updated_at ON conversations FOR EACH ROW EXECUTE FUNCTION conversation_words_stale()`
    } else for (const { sql } of triggers) services.db.run(sql)
  }
  // Eight rounds, each way first in turn (whichever runs first after a switch pays for it), so that
  // a drift over the run (PostgreSQL's sends are mostly their commit's WAL flush) weighs on both alike.
  for (let round = 0; round < 8; round++) {
    if (round % 2 === 0) {
      for (let i = 0; i < SENDS / 8; i++) now.push(await send())
      await switchOff()
      for (let i = 0; i < SENDS / 8; i++) before.push(await send())
      await switchOn()
    } else {
      await switchOff()
      for (let i = 0; i < SENDS / 8; i++) before.push(await send())
      await switchOn()
      for (let i = 0; i < SENDS / 8; i++) now.push(await send())
    }
  }
  const ratio = percentile(now, 0.5) / percentile(before, 0.5)
  console.log(
    `  POST /chat into a conversation of ~${MESSAGES} messages: now p50 ${percentile(now, 0.5).toFixed(2)} ms p95 ${percentile(now, 0.95).toFixed(2)} ms | today's path p50 ${percentile(before, 0.5).toFixed(2)} ms p95 ${percentile(before, 0.95).toFixed(2)} ms | ${ratio.toFixed(2)}x`,
  )
  if (!postgres) services.db.close()
  if (process.env.BENCH_KEEP_DATABASE === '1' && !postgres) console.log(`  kept the data folder ${dataDir} (BENCH_KEEP_DATABASE=1): remove it when done`)
  else rmSync(dataDir, { recursive: true, force: true })
}

console.log(`\n== Conversations: search at ${CONVERSATIONS.toLocaleString()} × ${MESSAGES} messages, and sending beside today's path (in-process)`)
if (!process.env.BENCH_CONV_SKIP_SQLITE) await run('SQLite')
const scratch = await scratchPostgres()
if (!scratch) console.log(`PostgreSQL: ${BENCH_DATABASE_SKIPPED}`)
else {
  try {
    await run('PostgreSQL', scratch.sql)
  } finally {
    await scratch.drop()
  }
}
