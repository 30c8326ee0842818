import { describe, expect, test } from 'bun:test'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createModels } from '../../src/ml'
import { TransformersEmbedder } from '../../src/ml/transformers/embedder'
import { TransformersGenerator } from '../../src/ml/transformers/generator'
import { AppError } from '../../src/core/errors'
import { makeServer, tempDir } from '../helpers'

const FIXTURES = join(import.meta.dir, '../fixtures/models')
const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))

describe('transformers.js engines on the fixture models', () => {
  test('the BERT-style encoder embeds through the real pipeline: dims, normalised, batched', async () => {
    const embedder = await TransformersEmbedder.load(FIXTURES, 'fixtures/tiny-bert')
    expect(embedder.id).toBe('fixtures/tiny-bert')
    expect(embedder.dimensions).toBe(32)
    const texts = Array.from({ length: 40 }, (_, i) => `document number ${i} about cats and the capital of france`)
    const vectors = await embedder.embed(texts)
    expect(vectors).toHaveLength(40)
    for (const v of vectors) {
      expect(v.length).toBe(32)
      expect(norm(v)).toBeCloseTo(1, 4)
    }
    // Batching does not change results: the same text alone embeds the same.
    const [alone] = await embedder.embed([texts[35]!])
    for (let i = 0; i < 32; i++) expect(alone![i]!).toBeCloseTo(vectors[35]![i]!, 4)
    expect([...vectors[0]!]).not.toEqual([...vectors[1]!])
  })

  test('the Llama-style LM streams tokens with its chat template and honours maxTokens', async () => {
    const generator = await TransformersGenerator.load(FIXTURES, 'fixtures/tiny-llama')
    expect(generator.contextLength).toBe(256)
    expect(generator.prompt([{ role: 'user', content: 'Hi' }])).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')
    expect(await generator.countTokens('hello world')).toBeGreaterThan(1)
    const pieces: string[] = []
    for await (const piece of generator.stream([{ role: 'user', content: 'Hello, how are you?' }], { maxTokens: 12 })) pieces.push(piece)
    expect(pieces.length).toBeGreaterThan(0)
    const result = await generator.generate([{ role: 'user', content: 'Hello, how are you?' }], { maxTokens: 12 })
    // Greedy decoding is deterministic: the stream and the whole reply agree.
    expect(result.text).toBe(pieces.join(''))
    expect(result.promptTokens).toBeGreaterThan(5)
  })

  test('the reply gets what the context leaves; a prompt longer than the context is refused, never cut', async () => {
    const generator = await TransformersGenerator.load(FIXTURES, 'fixtures/tiny-llama')
    const ask = (words: number) => [{ role: 'user' as const, content: Array.from({ length: words }, () => 'the cat').join(' ') }]
    let words = 10
    while ((await generator.countTokens(generator.prompt(ask(words + 5)))) < 240) words += 5
    const prompt = await generator.countTokens(generator.prompt(ask(words)))
    expect(prompt).toBeGreaterThan(200)
    // Asking for 512 new tokens from a 256-token model: the reply stops where the context ends.
    const result = await generator.generate(ask(words), { maxTokens: 512 })
    expect(result.promptTokens).toBe(prompt)
    // The fixture's random weights never choose the end token: it writes until the context is full.
    expect(result.completionTokens).toBe(256 - prompt)
    expect(result.finishReason).toBe('length')

    const error = await generator.generate(ask(200), { maxTokens: 8 }).catch((e) => e)
    expect(error).toBeInstanceOf(AppError)
    expect(error.status).toBe(400)
    expect(error.message).toContain('fixtures/tiny-llama reads at most 256')
  })

  test("an encoder's width comes from dim or d_model when config.json has no hidden_size", async () => {
    const dir = tempDir('dim')
    cpSync(join(FIXTURES, 'fixtures/tiny-bert'), join(dir, 'acme/distil'), { recursive: true })
    const configPath = join(dir, 'acme/distil/config.json')
    const { hidden_size, ...rest } = JSON.parse(readFileSync(configPath, 'utf8'))
    writeFileSync(configPath, JSON.stringify({ ...rest, dim: hidden_size }))
    expect((await TransformersEmbedder.load(dir, 'acme/distil')).dimensions).toBe(32)
    writeFileSync(configPath, JSON.stringify(rest))
    const probed = await TransformersEmbedder.load(dir, 'acme/distil')
    expect(probed.dimensions).toBe(32)
    expect((await probed.embed(['a cat']))[0]).toHaveLength(32)
  })

  test('a model that loads but fails when it runs is 503 MODEL_UNAVAILABLE without paths, not a 500', async () => {
    const dir = tempDir('swapped')
    cpSync(join(FIXTURES, 'fixtures/tiny-bert'), join(dir, 'acme/encoder'), { recursive: true })
    cpSync(join(FIXTURES, 'fixtures/tiny-llama'), join(dir, 'acme/lm'), { recursive: true })
    // Each folder gets the other's weights: both load, neither can run.
    cpSync(join(FIXTURES, 'fixtures/tiny-llama/onnx/model.onnx'), join(dir, 'acme/encoder/onnx/model.onnx'))
    cpSync(join(FIXTURES, 'fixtures/tiny-bert/onnx/model.onnx'), join(dir, 'acme/lm/onnx/model.onnx'))
    const failures = [
      await TransformersEmbedder.load(dir, 'acme/encoder').then((e) => e.embed(['hello'])).catch((e) => e),
      await TransformersGenerator.load(dir, 'acme/lm').then((g) => g.generate([{ role: 'user', content: 'hi' }], { maxTokens: 4 })).catch((e) => e),
    ]
    for (const error of failures) {
      expect(error).toBeInstanceOf(AppError)
      expect(error.code).toBe('MODEL_UNAVAILABLE')
      expect(error.message).toContain('failed while running')
      expect(error.message).not.toContain(dir)
    }
  })

  test('cancellation stops generation', async () => {
    const generator = await TransformersGenerator.load(FIXTURES, 'fixtures/tiny-llama')
    const controller = new AbortController()
    let pieces = 0
    for await (const _ of generator.stream([{ role: 'user', content: 'Tell me a long story' }], { maxTokens: 200 }, controller.signal)) {
      pieces++
      controller.abort()
    }
    expect(pieces).toBe(1)
    const full = await generator.generate([{ role: 'user', content: 'Tell me a long story' }], { maxTokens: 200 })
    expect(full.completionTokens).toBeGreaterThan(pieces)
  })

  test('createModels picks configured local models and reports them ready', async () => {
    const models = createModels({ modelsDir: FIXTURES, embedModel: 'fixtures/tiny-bert', chatModel: 'fixtures/tiny-llama' })
    expect((await models.embedder()).dimensions).toBe(32)
    expect((await models.generator()).id).toBe('fixtures/tiny-llama')
    expect(models.status()).toMatchObject({ embedder: 'ready', llm: 'ready', embedderId: 'fixtures/tiny-bert', generatorId: 'fixtures/tiny-llama' })
  })

  test('the server answers with the configured local models, and /health names them', async () => {
    const { call, login } = makeServer({ modelsDir: FIXTURES, embedModel: 'fixtures/tiny-bert', chatModel: 'fixtures/tiny-llama' })
    const { accessToken: token } = await login()
    const chat = await call('POST', '/chat', { token, body: { message: 'hello' } })
    expect(chat.status).toBe(200)
    expect(chat.json.metadata.model).toBe('fixtures/tiny-llama')
    expect(chat.json.metadata.completionTokens).toBeGreaterThan(0)
    const ingest = await call('POST', '/rag/ingest', { token, body: { collection: 'tiny', documents: [{ id: 'a', content: 'the cat sat on the mat' }] } })
    expect(ingest.json.ingested).toBe(1)
    const collections = await call('GET', '/rag/collections', { token })
    expect(collections.json.collections[0]).toMatchObject({ embedder: 'fixtures/tiny-bert', dimensions: 32 })
    await Bun.sleep(260) // the health document is re-probed at most every 250 ms
    const health = await call('GET', '/health')
    expect(health.json.connections).toMatchObject({ embedder: 'ready', llm: 'ready' })
    expect(health.json.models).toEqual({ embedder: 'fixtures/tiny-bert', generator: 'fixtures/tiny-llama' })
  })
})
