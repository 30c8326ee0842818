// The load generator of bench/team-load.ts, run as its own process:
// `bun bench/team-users.ts <base-url> <tokens.json> <users> <seconds> [tts-every]`. The users share the
// accounts of tokens.json in turn (64 users on 8 accounts: 8 each); each loops over the team mix —
// chat, stream, RAG search, conversations, system info, calculator, TTS, health — and notes every
// request's latency. Then every chat it was answered 200 for is looked for in its conversation
// (a stored write missing there is a lost write). Prints one JSON line:
// { routes: { [route]: { count, errors, p50, p99, settledP99 } }, errors: [first few failures], requests, seconds, chats, lost }.
import { RouteTimings } from './route-timings'
const [base, tokensFile, usersArg = '64', secondsArg = '60', ttsEveryArg = '32'] = process.argv.slice(2)
/** Each user asks for speech once every this many rounds (0: never); the users' turns are spread out. */
const TTS_EVERY = Number(ttsEveryArg)
if (!base || !tokensFile) throw new Error('usage: bun bench/team-users.ts <base-url> <tokens.json> <users> <seconds> [tts-every]')
const tokens = JSON.parse(await Bun.file(tokensFile).text()) as string[]
const started = performance.now()
const deadline = started + Number(secondsArg) * 1000

/** The requests begun after the first SETTLE_SECONDS also get a p99 of their own (BENCH_TEAM_SETTLE_SECONDS, default 5; see team-load.ts). */
const SETTLE_SECONDS = Number(process.env.BENCH_TEAM_SETTLE_SECONDS ?? 5)
const timings = new RouteTimings(started + SETTLE_SECONDS * 1000)
const timed = timings.timed.bind(timings)
/** Chats answered 200, by conversation: [token, messages sent there]. */
const acknowledged = new Map<string, { token: string; messages: Set<string> }>()


async function user(token: string, n: number) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  let conversationId: string | undefined
  for (let i = 0; performance.now() < deadline; i++) {
    const message = `Question ${i} from user ${n}: when does the harbour office open, and who keeps the keys?`
    const into = conversationId && i % 4 ? conversationId : undefined
    await timed('POST /chat', () => fetch(`${base}/chat`, { method: 'POST', headers, body: JSON.stringify({ message, ...(into ? { conversationId: into } : {}) }) }), async (response) => {
      const body = (await response.json()) as { metadata?: { conversationId?: string } }
      const id = body.metadata?.conversationId
      if (response.status !== 200 || !id) return
      conversationId ??= id
      const entry = acknowledged.get(id) ?? { token, messages: new Set<string>() }
      entry.messages.add(message)
      acknowledged.set(id, entry)
    })
    await timed('GET /stream', () => fetch(`${base}/stream?message=${encodeURIComponent(message)}`, { headers }), (response) => response.text())
    await timed('POST /rag/search', () => fetch(`${base}/rag/search`, { method: 'POST', headers, body: JSON.stringify({ collection: 'handbook', query: `harbour keys ${i % 7}`, limit: 5 }) }))
    await timed('GET /conversations', () => fetch(`${base}/conversations?limit=10`, { headers }))
    await timed('GET /system/info', () => fetch(`${base}/system/info`, { headers }))
    await timed('POST /plugins/calculator/execute', () => fetch(`${base}/plugins/calculator/execute`, { method: 'POST', headers, body: JSON.stringify({ action: 'evaluate', parameters: { expression: `${n}*(3+${i % 10})` } }) }))
    if (TTS_EVERY > 0 && (i + n) % TTS_EVERY === 0) {
      await timed('POST /voice/tts', () => fetch(`${base}/voice/tts`, { method: 'POST', headers, body: JSON.stringify({ text: `The harbour office opens at ${6 + (i % 3)}.`, voice: 'default', language: 'en-US', speed: 1, format: 'wav' }) }))
    }
    await timed('GET /health', () => fetch(`${base}/health`))
  }
}

await Promise.all(Array.from({ length: Number(usersArg) }, (_, n) => user(tokens[n % tokens.length]!, n)))
const seconds = (performance.now() - started) / 1000

// Every acknowledged chat must be in its conversation.
let chats = 0
let lost = 0
for (const [id, { token, messages }] of acknowledged) {
  chats += messages.size
  const response = await fetch(`${base}/conversations/${id}`, { headers: { authorization: `Bearer ${token}` } })
  const stored = response.ok ? new Set(((await response.json()) as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === 'user').map((m) => m.content)) : new Set<string>()
  for (const message of messages) if (!stored.has(message)) lost++
}

const { routes, errors, requests } = timings.summary()
console.log(JSON.stringify({ routes, errors, requests, seconds, chats, lost }))
