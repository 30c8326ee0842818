// Streaming chat: tokens/s delivered through GET /stream to an HTTP client, next to Generator.stream
// alone on the same prompt, and the time to the first chunk (SmolLM2-135M shape, random weights).
import { readEventData } from '../src/core/sse-reader'
import { BENCH_CHAT_ID, ensureBenchModels } from './models'
import { startInProcess } from './server'

const RUNS = Number(process.env.BENCH_CHAT_RUNS ?? 2)
const MESSAGE = 'Write a short paragraph about the printer on the third floor.'

export async function benchChat() {
  const modelsDir = ensureBenchModels()
  const server = await startInProcess({ modelsDir, chatModel: BENCH_CHAT_ID })
  const { services, base, login } = server
  const generator = await services.models.generator()
  // The very prompt /stream assembles, so both paths generate the same tokens.
  const { messages } = await services.chat.prepare({ userId: login.user.id, message: MESSAGE })
  // Greedy decoding of the same prompt yields the same tokens on both paths: count them once, exactly.
  const { completionTokens } = await generator.generate(messages, { maxTokens: 512 })

  const direct = { tokens: 0, seconds: 0, firstMs: [] as number[] }
  const http = { tokens: 0, seconds: 0, firstMs: [] as number[] }
  for (let run = 0; run < RUNS; run++) {
    let started = performance.now()
    let first = 0
    let text = ''
    for await (const piece of generator.stream(messages, { maxTokens: 512 })) {
      first ||= performance.now() - started
      text += piece
    }
    direct.seconds += (performance.now() - started) / 1000
    direct.tokens += completionTokens
    direct.firstMs.push(first)

    started = performance.now()
    first = 0
    text = ''
    const response = await fetch(`${base}/stream?message=${encodeURIComponent(MESSAGE)}`, { headers: { authorization: `Bearer ${login.accessToken}` } })
    for await (const data of readEventData(response.body!)) {
      const event = JSON.parse(data)
      if (event.type === 'chunk') {
        first ||= performance.now() - started
        text += event.content
      }
    }
    http.seconds += (performance.now() - started) / 1000
    http.tokens += completionTokens
    http.firstMs.push(first)
  }
  server.stop()

  const directRate = direct.tokens / direct.seconds
  const httpRate = http.tokens / http.seconds
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
  console.log(`\n== Streaming chat (SmolLM2-135M shape, ${RUNS} runs of ${completionTokens} tokens each way)`)
  console.log(`${'Generator.stream alone'.padEnd(34)} ${directRate.toFixed(1).padStart(7)} tok/s   first piece ${mean(direct.firstMs).toFixed(0).padStart(5)} ms   baseline`)
  console.log(
    `${'GET /stream read by an HTTP client'.padEnd(34)} ${httpRate.toFixed(1).padStart(7)} tok/s   first chunk ${mean(http.firstMs).toFixed(0).padStart(5)} ms   ${((httpRate / directRate) * 100).toFixed(1)}% of direct   goal >= 95%  ${httpRate / directRate >= 0.95 ? 'ok' : 'MISSED'}`,
  )
}

if (import.meta.main) await benchChat()
