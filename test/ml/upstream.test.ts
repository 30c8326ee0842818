import { afterAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/core/errors'
import { createModels } from '../../src/ml'
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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
    const modelsDir = mkdtempSync(join(tmpdir(), 'uagent-broken-'))
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
