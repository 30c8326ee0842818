// The OpenAI-compatible stream: tokens/s of POST /v1/chat/completions (stream: true) read by an
// HTTP client, next to GET /stream in the same run, on the same prompt and model (SmolLM2-135M
// shape, random weights, greedy decoding: both paths generate the very same tokens).
import { readEventData } from '../src/core/sse-reader'
import { BENCH_CHAT_ID, ensureBenchModels } from './models'
import { startInProcess } from './server'

const RUNS = Number(process.env.BENCH_OPENAI_RUNS ?? 3)
const MESSAGE = 'Write a short paragraph about the printer on the third floor.'

export async function benchOpenAi() {
  const modelsDir = ensureBenchModels()
  const server = await startInProcess({ modelsDir, chatModel: BENCH_CHAT_ID })
  const { services, base, login } = server
  const key = (await (
    await fetch(`${base}/auth/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }) })
  ).json()) as { key: string }
  const generator = await services.models.generator()
  // The prompt /stream assembles, sent as is to /v1, with the same reply limit: same tokens both ways.
  const { messages, maxTokens } = await services.chat.prepare({ userId: login.user.id, message: MESSAGE })
  const { completionTokens } = await generator.generate(messages, { maxTokens })

  async function timed(request: () => Promise<Response>, content: (event: any) => string | undefined) {
    const started = performance.now()
    let first = 0
    let text = ''
    const response = await request()
    for await (const data of readEventData(response.body!)) {
      if (data === '[DONE]') break
      const piece = content(JSON.parse(data))
      if (piece) {
        first ||= performance.now() - started
        text += piece
      }
    }
    return { seconds: (performance.now() - started) / 1000, firstMs: first, text }
  }

  const paths = {
    stream: { seconds: 0, firstMs: [] as number[], text: '' },
    v1: { seconds: 0, firstMs: [] as number[], text: '' },
  }
  for (let run = 0; run < RUNS; run++) {
    const viaStream = await timed(
      () => fetch(`${base}/stream?message=${encodeURIComponent(MESSAGE)}`, { headers: { authorization: `Bearer ${login.accessToken}` } }),
      (event) => (event.type === 'chunk' ? event.content : undefined),
    )
    const viaV1 = await timed(
      () =>
        fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: generator.id, messages, max_tokens: maxTokens, temperature: 0, stream: true }),
        }),
      (event) => event.choices?.[0]?.delta?.content,
    )
    for (const [name, result] of [['stream', viaStream], ['v1', viaV1]] as const) {
      paths[name].seconds += result.seconds
      paths[name].firstMs.push(result.firstMs)
      paths[name].text = result.text
    }
  }
  server.stop()

  const tokens = completionTokens * RUNS
  const streamRate = tokens / paths.stream.seconds
  const v1Rate = tokens / paths.v1.seconds
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
  const ratio = v1Rate / streamRate
  console.log(`\n== OpenAI-compatible stream (SmolLM2-135M shape, ${RUNS} runs of ${completionTokens} tokens each way, alternating)`)
  console.log(`${'GET /stream'.padEnd(38)} ${streamRate.toFixed(1).padStart(7)} tok/s   first chunk ${mean(paths.stream.firstMs).toFixed(0).padStart(5)} ms   baseline`)
  console.log(
    `${'POST /v1/chat/completions stream'.padEnd(38)} ${v1Rate.toFixed(1).padStart(7)} tok/s   first chunk ${mean(paths.v1.firstMs).toFixed(0).padStart(5)} ms   ${(ratio * 100).toFixed(1)}% of /stream   goal >= 95%  ${ratio >= 0.95 ? 'ok' : 'MISSED'}`,
  )
  if (paths.stream.text !== paths.v1.text) console.log('(note: the two paths produced different text; the comparison is not like for like)')
}

if (import.meta.main) await benchOpenAi()
