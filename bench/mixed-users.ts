// The load generator of bench/mixed.ts, run as its own process:
// `bun bench/mixed-users.ts <base-url> <tokens.json> <seconds>`. Each token is one user; each user
// loops over a mix of routes and notes every request's latency: chat, stream, RAG search,
// conversations, me, health, system info, the calculator plugin and speech synthesis (one request
// in twelve, ~8 %, a short spoken reply as the voice command makes). Prints one JSON line:
// { routes: { [route]: { count, errors, p50, p99 } }, errors: [first few failures], requests, seconds }.
import { RouteTimings } from './route-timings'
const [base, tokensFile, secondsArg = '60'] = process.argv.slice(2)
if (!base || !tokensFile) throw new Error('usage: bun bench/mixed-users.ts <base-url> <tokens.json> <seconds>')
const tokens = JSON.parse(await Bun.file(tokensFile).text()) as string[]
const startedAt = performance.now()
const deadline = startedAt + Number(secondsArg) * 1000

const timings = new RouteTimings()
const timed = timings.timed.bind(timings)


async function user(token: string, n: number) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  let conversationId: string | undefined
  for (let i = 0; performance.now() < deadline; i++) {
    const message = `Question ${i} from user ${n}: when does the harbour office open, and who keeps the keys?`
    await timed('POST /chat', () => fetch(`${base}/chat`, { method: 'POST', headers, body: JSON.stringify({ message, ...(conversationId && i % 4 ? { conversationId } : {}) }) }), async (response) => {
      const body = (await response.json()) as { metadata?: { conversationId?: string } }
      conversationId ??= body.metadata?.conversationId
    })
    await timed('GET /stream', () => fetch(`${base}/stream?message=${encodeURIComponent(message)}`, { headers }), (response) => response.text())
    await timed('POST /rag/search', () => fetch(`${base}/rag/search`, { method: 'POST', headers, body: JSON.stringify({ collection: 'handbook', query: `harbour keys ${i % 7}`, limit: 5 }) }))
    await timed('GET /conversations', () => fetch(`${base}/conversations?limit=10`, { headers }))
    await timed('GET /auth/me', () => fetch(`${base}/auth/me`, { headers }))
    await timed('GET /health', () => fetch(`${base}/health`))
    await timed('GET /system/info', () => fetch(`${base}/system/info`, { headers }))
    await timed('POST calculator', () => fetch(`${base}/plugins/calculator/execute`, { method: 'POST', headers, body: JSON.stringify({ action: 'evaluate', parameters: { expression: `${i % 13} * (3 + ${n % 7}) ^ 2` } }) }))
    await timed('POST /voice/tts', () =>
      fetch(`${base}/voice/tts`, { method: 'POST', headers, body: JSON.stringify({ text: `Reply ${i} to user ${n}: the harbour office opens at six in the morning; ask the duty officer.`, voice: 'default', language: 'en-US', speed: 1, format: 'mp3' }) }),
    )
    await timed('GET /health', () => fetch(`${base}/health`))
    await timed('GET /auth/me', () => fetch(`${base}/auth/me`, { headers }))
    await timed('POST /rag/search', () => fetch(`${base}/rag/search`, { method: 'POST', headers, body: JSON.stringify({ collection: 'handbook', query: `duty officer ${i % 5}`, limit: 5 }) }))
  }
}

await Promise.all(tokens.map((token, n) => user(token, n)))
const { routes, errors, requests } = timings.summary()
console.log(JSON.stringify({ routes, errors, requests, seconds: (performance.now() - startedAt) / 1000 }))
