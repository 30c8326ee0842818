import { afterAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/core/errors'
import { createModels } from '../../src/ml'
import { UpstreamClient, UpstreamEmbedder, UpstreamGenerator } from '../../src/ml/upstream'
import { cpSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helpers'

/** A fake OpenAI-compatible server: it answers from the last user message, streamed or whole. */
const seen: { stream: boolean; model: string; messages: { content: string }[] }[] = []
let failWith: number | null = null
const fake = Bun.serve({
  port: 0,
  async fetch(request) {
    const url = new URL(request.url)
    if (failWith) return new Response('upstream exploded', { status: failWith })
    if (url.pathname === '/v1/models') return Response.json({ data: [{ id: 'fake-llm' }] })
    if (url.pathname === '/v1/embeddings') {
      const body = (await request.json()) as { input: string[] }
      return Response.json({ data: body.input.map((text, index) => ({ index, embedding: [text.length, 1, 0] })) })
    }
    const body = (await request.json()) as { stream: boolean; model: string; messages: { content: string }[] }
    seen.push(body)
    const reply = `echo: ${body.messages.at(-1)!.content}`
    if (!body.stream) {
      return Response.json({ model: body.model, choices: [{ message: { role: 'assistant', content: reply }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 3 } })
    }
    const words = reply.split(/(?= )/)
    const events = words.map((w) => `data: ${JSON.stringify({ choices: [{ delta: { content: w } }] })}\n\n`)
    return new Response(`${events.join('')}data: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } })
  },
})
afterAll(() => fake.stop(true))

const config = (extra: object = {}) => ({ modelsDir: '/nonexistent', llmUrl: `http://127.0.0.1:${fake.port}`, ...extra })

describe('OpenAI-compatible upstream', () => {
  test('generates whole replies and reports usage', async () => {
    failWith = null
    const models = createModels(config({ llmModel: 'fake-llm' }))
    const generator = await models.generator()
    expect(generator.id).toBe('fake-llm')
    const result = await generator.generate([{ role: 'user', content: 'ping' }], { maxTokens: 5 })
    expect(result).toMatchObject({ text: 'echo: ping', promptTokens: 7, completionTokens: 3, finishReason: 'stop' })
    expect(seen.at(-1)!.stream).toBe(false)
    expect(models.status().llm).toBe('ready')
  })

  test('streams pieces parsed from server-sent events; discovers the model when none is configured', async () => {
    failWith = null
    const generator = await createModels(config()).generator()
    expect(generator.id).toBe('fake-llm')
    const pieces: string[] = []
    for await (const piece of generator.stream([{ role: 'user', content: 'tell me more' }])) pieces.push(piece)
    expect(pieces.length).toBeGreaterThan(2)
    expect(pieces.join('')).toBe('echo: tell me more')
    expect(seen.at(-1)!.stream).toBe(true)
  })

  test('upstream failures become 503 MODEL_UNAVAILABLE and /health sees it unreachable', async () => {
    const models = createModels(config({ llmModel: 'fake-llm' }))
    const generator = await models.generator()
    failWith = 500
    const error = await generator.generate([{ role: 'user', content: 'x' }]).catch((e) => e)
    failWith = null
    expect(error).toBeInstanceOf(AppError)
    expect(error.status).toBe(503)
    expect(error.code).toBe('MODEL_UNAVAILABLE')
    expect(error.message).toContain('answered 500')
    expect(models.status().llm).toBe('unreachable')
  })

  test('an unreachable server is 503 too', async () => {
    const models = createModels({ modelsDir: '/nonexistent', llmUrl: 'http://127.0.0.1:9', llmModel: 'x' })
    const error = await (await models.generator()).generate([{ role: 'user', content: 'x' }]).catch((e) => e)
    expect(error.code).toBe('MODEL_UNAVAILABLE')
    expect(error.message).toContain('cannot be reached')
  })

  test('embeddings through the upstream when configured as upstream:<model>', async () => {
    failWith = null
    const embedder = await createModels(config({ embedModel: 'upstream:fake-embed' })).embedder()
    expect(embedder.dimensions).toBe(3)
    const [v] = await embedder.embed(['abcd'])
    expect([...v!]).toEqual([4, 1, 0])
  })
})

describe('engine selection', () => {
  test('without weights the built-in engines answer, and /health says so', async () => {
    const models = createModels({ modelsDir: '/nonexistent' })
    expect((await models.embedder()).id).toBe('builtin/hash-embed-384')
    expect((await models.generator()).id).toBe('builtin/extractive')
    expect(models.status()).toMatchObject({ embedder: 'builtin', llm: 'builtin' })
  })

  test('a configured model that is missing is 503 MODEL_UNAVAILABLE with guidance, never a crash', async () => {
    const models = createModels({ modelsDir: '/tmp/no-models-here', embedModel: 'acme/missing-embed', chatModel: 'acme/missing-chat' })
    expect(models.status()).toMatchObject({ embedder: 'error', llm: 'unreachable' })
    for (const load of [models.embedder, models.generator]) {
      const error = await load().catch((e) => e)
      expect(error).toBeInstanceOf(AppError)
      expect(error.status).toBe(503)
      expect(error.message).toContain('uagent models pull')
      expect(error.message).toContain('models/README.md')
      expect(error.message).not.toContain('/tmp/') // no paths of this machine reach API clients
    }
  })

  test('a broken model file is 503 with guidance and without paths of this machine', async () => {
    const modelsDir = tempDir('broken')
    cpSync(join(import.meta.dir, '../fixtures/models/fixtures/tiny-llama'), join(modelsDir, 'acme/broken'), { recursive: true })
    writeFileSync(join(modelsDir, 'acme/broken/onnx/model.onnx'), 'not a protobuf')
    const models = createModels({ modelsDir, chatModel: 'acme/broken' })
    const error = await models.generator().catch((e) => e)
    expect(error).toBeInstanceOf(AppError)
    expect(error.code).toBe('MODEL_UNAVAILABLE')
    expect(error.message).toContain('Model acme/broken could not be loaded')
    expect(error.message).toContain('acme/broken/onnx/model.onnx')
    expect(error.message).not.toContain(modelsDir)
    expect(models.status().llm).toBe('unreachable')
  })
})

/** A model server that misbehaves in the way `mode` says. */
let mode = 'ok'
const sse = (...events: string[]) => events.map((e) => `data: ${e}\n\n`).join('')
const piece = (content: string) => JSON.stringify({ choices: [{ delta: { content } }] })
const broken = Bun.serve({
  port: 0,
  async fetch(request) {
    const path = new URL(request.url).pathname
    if (path === '/v1/embeddings') {
      const { input } = (await request.json()) as { input: string[] }
      if (mode === 'embed-dims') return Response.json({ data: input.map((_, index) => ({ index, embedding: index ? [1, 2] : [1, 2, 3] })) })
      if (mode === 'embed-null') return Response.json({ data: input.map((_, index) => ({ index, embedding: null })) })
      if (mode === 'embed-nan') return Response.json({ data: input.map((_, index) => ({ index, embedding: [1, 'x', 3] })) })
      if (mode === 'embed-index') return Response.json({ data: input.map(() => ({ index: 0, embedding: [1, 2, 3] })) })
      return Response.json({ data: input.map((_, index) => ({ index, embedding: [1, 2, 3] })) })
    }
    await request.text()
    switch (mode) {
      case 'html':
        return new Response('<html>Sign in</html>', { headers: { 'content-type': 'text/html' } })
      case 'traceback':
        return new Response('Traceback (most recent call last):\n  File "/opt/llm/secret_server.py", line 12', { status: 500 })
      case 'no-content':
        return new Response(null, { status: 204 })
      case 'not-sse':
        return new Response('just some text, no events', { headers: { 'content-type': 'text/plain' } })
      case 'slow':
      case 'stall': {
        // 'slow' writes a piece every 40 ms for 400 ms (longer than the idle limit in total, never
        // silent for long); 'stall' writes one piece and then goes silent.
        let sent = 0
        return new Response(
          new ReadableStream({
            async pull(controller) {
              if (mode === 'stall' && sent === 1) return new Promise(() => {})
              if (sent === 10) {
                controller.enqueue(new TextEncoder().encode('data: [DONE]\n\n'))
                return controller.close()
              }
              await Bun.sleep(40)
              controller.enqueue(new TextEncoder().encode(sse(piece(`p${sent++} `))))
            },
          }),
          { headers: { 'content-type': 'text/event-stream' } },
        )
      }
      default:
        return new Response(sse(piece('fine'), '[DONE]'), { headers: { 'content-type': 'text/event-stream' } })
    }
  },
})
afterAll(() => broken.stop(true))

describe('a misbehaving model server', () => {
  const upstream = (extra: object = {}) => new UpstreamGenerator(new UpstreamClient({ url: `http://127.0.0.1:${broken.port}`, idleMs: 150, ...extra }), 'm')
  const ask = [{ role: 'user' as const, content: 'hi' }]
  const streamed = async (generator: UpstreamGenerator) => {
    const pieces: string[] = []
    try {
      for await (const p of generator.stream(ask)) pieces.push(p)
      return { pieces, error: null as any }
    } catch (error) {
      return { pieces, error: error as any }
    }
  }

  test('every broken answer is 503 MODEL_UNAVAILABLE, never a crash or an empty success', async () => {
    for (const [name, run] of [
      ['html', () => upstream().generate(ask)],
      ['no-content', () => streamed(upstream()).then((r) => Promise.reject(r.error))],
      ['not-sse', () => streamed(upstream()).then((r) => Promise.reject(r.error))],
    ] as const) {
      mode = name
      const error = await run().catch((e) => e)
      expect(error, name).toBeInstanceOf(AppError)
      expect(error.code, name).toBe('MODEL_UNAVAILABLE')
    }
  })

  test('what the server said and the credentials in its URL never reach the client', async () => {
    mode = 'traceback'
    const url = `http://admin:s3cret@127.0.0.1:${broken.port}`
    const error = await new UpstreamGenerator(new UpstreamClient({ url }), 'm').generate(ask).catch((e) => e)
    expect(error.code).toBe('MODEL_UNAVAILABLE')
    expect(error.message).toContain('answered 500')
    expect(error.message).not.toContain('s3cret')
    expect(error.message).not.toContain('Traceback')
    expect(error.message).not.toContain('/opt/')
  })

  test('the idle limit restarts with every piece: a slow stream finishes, a silent one is 503', async () => {
    mode = 'slow'
    const slow = await streamed(upstream())
    expect(slow.error).toBeNull()
    expect(slow.pieces).toHaveLength(10)
    mode = 'stall'
    const stalled = await streamed(upstream())
    expect(stalled.pieces).toEqual(['p0 '])
    expect(stalled.error.code).toBe('MODEL_UNAVAILABLE')
    expect(stalled.error.message).toContain('went silent')
  })

  test('embeddings are checked before anything is stored: counts, indices, dimensions, numbers', async () => {
    const client = new UpstreamClient({ url: `http://127.0.0.1:${broken.port}` })
    mode = 'ok'
    const embedder = await UpstreamEmbedder.load(client, 'e')
    expect(embedder.dimensions).toBe(3)
    for (const name of ['embed-dims', 'embed-null', 'embed-nan', 'embed-index']) {
      mode = name
      const error = await embedder.embed(['a', 'b']).catch((e) => e)
      expect(error.code, name).toBe('MODEL_UNAVAILABLE')
      expect(error.message, name).toContain('unusable embeddings')
    }
  })
})
