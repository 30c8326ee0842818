import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { cpSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { type WorkDone, WorkPool, workKind } from '../../src/core/work-pool'
import { THREAD_MIN_TEXTS } from '../../src/ml/builtin/threaded-hash-embedder'
import { TransformersEmbedder } from '../../src/ml/transformers/embedder'
import { tempDir } from '../helpers'

setDefaultTimeout(60_000)
const FIXTURES = join(import.meta.dir, '../fixtures/models')
const MODEL = 'fixtures/tiny-bert'
const BLOCK = workKind<{ ms: number }, number>('block', new URL('../fixtures/work/block.work.ts', import.meta.url).href)

// Different lengths (so batches are padded), accents, other scripts, an empty text, one past the model's 512 tokens.
const SAMPLES = [
  'The cat sat on the mat.',
  'Connections, connected, connecting: the connection pool reconnects.',
  "SELECT * FROM pg_stat_activity WHERE state = 'idle in transaction';",
  'Crème brûlée, naïve café, Ærø and the Straße.',
  'Журнал упреждающей записи и контрольные точки.',
  '日本語のテキストも埋め込まれる。',
  '',
  'word '.repeat(700),
]
const texts = Array.from({ length: THREAD_MIN_TEXTS * 3 + 5 }, (_, i) => `${SAMPLES[i % SAMPLES.length]} ${i % 3 ? `note ${i}` : ''}`.trim())
const bytes = (vectors: Float32Array[]) => vectors.map((v) => [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)])

const pools: WorkPool[] = []
afterAll(() => pools.forEach((pool) => pool.close()))
function poolOf(size: number, queueLimit: number) {
  const pool = new WorkPool({ size, queueLimit })
  pools.push(pool)
  const done: WorkDone[] = []
  pool.onDone((task) => done.push(task))
  return { pool, done }
}
async function until(check: () => boolean, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await Bun.sleep(5)
  }
}

describe('the transformers.js embedder on the work pool', () => {
  test('a large batch is embedded on a worker, bit for bit as this thread embeds it; a small one (a query) here, starting no worker', async () => {
    const { pool, done } = poolOf(1, 4)
    const pooled = await TransformersEmbedder.load(FIXTURES, MODEL, pool)
    const here = await TransformersEmbedder.load(FIXTURES, MODEL)
    expect(pooled.offThread).toBe(true)
    expect(here.offThread).toBe(false)
    expect(pooled.dimensions).toBe(32)
    const small = texts.slice(0, THREAD_MIN_TEXTS - 1)
    expect(bytes(await pooled.embed(small))).toEqual(bytes(await here.embed(small)))
    expect(pool.state()).toMatchObject({ started: 0, completed: 0 })

    const vectors = await pooled.embed(texts)
    expect(done.map((task) => `${task.kind}:${task.outcome}`)).toEqual(['onnx-embed:ok'])
    expect(vectors).toHaveLength(texts.length)
    expect(vectors.every((vector) => vector.length === 32)).toBe(true)
    expect(bytes(vectors)).toEqual(bytes(await here.embed(texts)))
    // Not a copy of one vector: the texts differ, and so do their vectors.
    expect(bytes(vectors.slice(0, 2))[0]).not.toEqual(bytes(vectors.slice(0, 2))[1])
  })

  test('the worker loads the model once: with its folder gone, the worker still embeds, while a fresh load fails', async () => {
    const dir = tempDir('onnx-once')
    cpSync(join(FIXTURES, MODEL), join(dir, 'acme/encoder'), { recursive: true })
    const { pool } = poolOf(1, 4)
    const pooled = await TransformersEmbedder.load(dir, 'acme/encoder', pool)
    const first = await pooled.embed(texts)
    rmSync(join(dir, 'acme'), { recursive: true, force: true })
    const error = await TransformersEmbedder.load(dir, 'acme/encoder').catch((e) => e)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(bytes(await pooled.embed(texts))).toEqual(bytes(first))
    expect(pool.state()).toMatchObject({ started: 1, completed: 2 })
  })

  test('a full pool is 503 BUSY with Retry-After at once; a background call waits for the worker instead', async () => {
    const { pool } = poolOf(1, 0)
    const pooled = await TransformersEmbedder.load(FIXTURES, MODEL, pool)
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
    const started = performance.now()
    const refused = await pooled.embed(texts).catch((e) => e)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(refused).toMatchObject({ code: 'BUSY', status: 503 })
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // A search query still embeds here while the pool is full.
    expect(await pooled.embed(['what is vacuum'])).toHaveLength(1)
    const background = pooled.embed(texts, { background: true })
    await until(() => pool.state().queued === 1)
    hold.abort()
    expect(await held).toBe('stopped')
    expect(await background).toHaveLength(texts.length)
  })

  test('a cancelled call leaves the queue, or stops between runs of the model keeping its worker; the next call is served', async () => {
    const { pool, done } = poolOf(1, 4)
    const pooled = await TransformersEmbedder.load(FIXTURES, MODEL, pool)
    // Queued behind another task: cancelled in the queue, never run.
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
    const queued = new AbortController()
    const waiting = pooled.embed(texts, { signal: queued.signal }).catch((e) => e)
    await until(() => pool.state().queued === 1)
    queued.abort()
    expect(await waiting).toMatchObject({ name: 'AbortError' })
    expect(pool.state()).toMatchObject({ queued: 0, cancelled: 1 })
    hold.abort()
    await held
    // Running: long enough (many runs of the model) to be stopped halfway.
    await pooled.embed(texts) // the worker has loaded the model
    const many = Array.from({ length: 4000 }, (_, i) => `${SAMPLES[i % 6]} ${i}`)
    const running = new AbortController()
    const kept = pool.state().started
    const call = pooled.embed(many, { signal: running.signal }).catch((e) => e)
    await until(() => pool.state().busy === 1)
    await Bun.sleep(50)
    const abortedAt = performance.now()
    running.abort()
    expect(await call).toMatchObject({ name: 'AbortError' })
    // It stopped in its worker (between two runs), well before the grace ran out: the worker and its model are kept.
    expect(performance.now() - abortedAt).toBeLessThan(1500)
    expect(pool.state()).toMatchObject({ busy: 0, queued: 0, cancelled: 3, started: kept })
    expect(done.filter((task) => task.kind === 'onnx-embed').map((task) => task.outcome)).toEqual(['cancelled', 'ok', 'cancelled'])
    expect(bytes(await pooled.embed(texts))).toEqual(bytes(await (await TransformersEmbedder.load(FIXTURES, MODEL)).embed(texts)))
  })

  test('an in-thread embedder stops between its runs once its signal aborts', async () => {
    const here = await TransformersEmbedder.load(FIXTURES, MODEL)
    const controller = new AbortController()
    controller.abort()
    expect(await here.embed(texts, { signal: controller.signal }).catch((e) => e)).toMatchObject({ name: 'AbortError' })
  })
})
