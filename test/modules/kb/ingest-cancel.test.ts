import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Services } from '../../../src/app'
import { join } from 'node:path'
import { type WorkDone, type WorkKind, type WorkPool, workKind } from '../../../src/core/work-pool'
import { THREAD_MIN_TEXTS } from '../../../src/ml/builtin/threaded-hash-embedder'
import { TransformersEmbedder } from '../../../src/ml/transformers/embedder'
import { chunkDocument, chunkOptionsFor } from '../../../src/modules/rag/chunking'
import { WRITE_BATCH } from '../../../src/modules/rag/service'
import { makeServer, tempDir } from '../../helpers'
import { formOf } from './files'

setDefaultTimeout(60_000)
const FIXTURES = join(import.meta.dir, '../../fixtures/models')
const work = (name: string) => new URL(`../../fixtures/work/${name}.work.ts`, import.meta.url).href
const BLOCK = workKind<{ ms: number }, number>('block', work('block'))
const CRASH = workKind<Record<string, never>, never>('crash', work('crash'))

/** An embedding batch holding the text `crash now` runs the crash kind instead: its worker dies, as a native crash would end it. */
function crashOnCue(pool: WorkPool) {
  const run = pool.run.bind(pool)
  pool.run = ((kind: WorkKind<any, any>, payload: any, options: any) =>
    kind.name === 'onnx-embed' && payload.texts.some((text: string) => text.includes('crash now')) ? run(CRASH, {}, options) : run(kind, payload, options)) as WorkPool['run']
}

const logged: string[] = []
const OPTIONS = { modelsDir: FIXTURES, embedModel: 'fixtures/tiny-bert', dataDir: tempDir('ingest-cancel'), workers: 1, workQueue: 1, rateLimitMax: 100_000, log: (line: string) => logged.push(line) }
/** Files are read here at once (a text file's text is its bytes): the only pool task of an upload is its embedding. */
const readHere = (services: Services) => {
  services.ingestJobs.extract = async (fileName, bytes) => ({ title: fileName, type: 'text', text: new TextDecoder().decode(bytes) })
}
const server = makeServer(OPTIONS, (services) => {
  crashOnCue(services.pool)
  readHere(services)
})
const done: WorkDone[] = []
server.services.pool.onDone((task) => done.push(task))
const listening = server.app.listen({ port: 0, hostname: '127.0.0.1' })
afterAll(async () => {
  await listening.stop(true)
  server.services.ingestJobs.close()
  server.services.pool.close()
  server.services.agents.close()
  server.services.db.close()
})
const pool = server.services.pool
const db = server.services.db

async function until(check: () => boolean, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting; the pool: ${JSON.stringify(pool.state())}`)
    await Bun.sleep(5)
  }
}

const TOPICS = ['the harbour office', 'the backup disk', 'the boiler room', 'the night shift', 'the loading dock', 'the cold store']
/** Documents of several chunks each: `count` of them make many write batches. */
const documents = (count: number, prefix = 'doc') =>
  Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    content: Array.from({ length: 4 + (i % 5) }, (_, p) => `Paragraph ${p} of ${prefix} ${i}: ${TOPICS[(i + p) % TOPICS.length]} opens at ${p + 6} and its keys are kept by the duty officer on call. `.repeat(8)).join('\n\n'),
  }))

/** POST /rag/ingest over a real socket, so that aborting the fetch closes the connection as a client going away does. */
function ingestOverHttp(token: string, body: unknown, signal: AbortSignal) {
  return outcome(
    fetch(`http://127.0.0.1:${listening.server!.port}/rag/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    }),
  )
}

/** A request's outcome as its client sees it: `answered <status>`, or the error's name (AbortError). */
function outcome(response: Promise<Response>): Promise<string> {
  return response.then(
    (response) => `answered ${response.status}`,
    (error) => (error as Error).name,
  )
}

/**
 * With a worker held busy: sends a request with a signal of its own, aborts it once its task waits
 * in the pool's queue, and checks that its client saw an AbortError and the task left the queue.
 */
async function abortWhileQueued(send: (signal: AbortSignal) => Promise<string>) {
  const before = pool.state().cancelled
  const client = new AbortController()
  const request = send(client.signal)
  await until(() => pool.state().queued === 1)
  client.abort()
  expect(await request).toBe('AbortError')
  await until(() => pool.state().cancelled === before + 1)
  expect(pool.state()).toMatchObject({ queued: 0, busy: 1 })
}

/** The stored documents of a collection, each with its chunks: the count of rows, of vectors, and whether an info row is there. */
function stored(collection: string) {
  return db
    .query<{ doc_id: string; chunks: number; vectors: number; info: number }, [string]>(
      `SELECT d.doc_id, (SELECT count(*) FROM rag_chunks c WHERE c.document_id = d.id) AS chunks,
              (SELECT count(*) FROM rag_chunks c JOIN rag_vec_32 v ON v.rowid = c.id WHERE c.document_id = d.id) AS vectors,
              (SELECT count(*) FROM rag_document_info i WHERE i.document_id = d.id) AS info
         FROM rag_documents d JOIN rag_collections k ON k.id = d.collection_id WHERE k.name = ? ORDER BY d.id`,
    )
    .all(collection)
}
const collectionCount = (name: string) => db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM rag_collections WHERE name = ?').get(name)!.n

describe('ingests and uploads embed on the work pool with the ONNX model, and stop when their client goes away', () => {
  test('an ingest is embedded by a worker, vectors as this thread makes them; a full pool is 503 BUSY, writing nothing', async () => {
    const { accessToken: token } = await server.login()
    const sent = documents(12, 'first')
    const ok = await server.call('POST', '/rag/ingest', { token, body: { collection: 'pooled', documents: sent } })
    expect(ok.status).toBe(200)
    expect(ok.json).toMatchObject({ ingested: 12, failed: 0 })
    expect(done.map((task) => `${task.kind}:${task.outcome}`)).toContain('onnx-embed:ok')
    // The stored vectors are, bit for bit, those the model makes of the chunks on this thread (one
    // write batch: the same texts in the same runs of the model).
    const rows = db
      .query<{ content: string; embedding: Uint8Array }, []>('SELECT c.content, v.embedding FROM rag_chunks c JOIN rag_vec_32 v ON v.rowid = c.id ORDER BY c.id')
      .all()
    expect(rows.length).toBeGreaterThanOrEqual(THREAD_MIN_TEXTS)
    expect(rows.length).toBeLessThanOrEqual(WRITE_BATCH)
    const here = await (await TransformersEmbedder.load(FIXTURES, 'fixtures/tiny-bert')).embed(rows.map((row) => row.content))
    expect(rows.map((row) => [...row.embedding])).toEqual(here.map((v) => [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)]))

    const hold = new AbortController()
    const held = [pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped'), pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')]
    await until(() => pool.state().queued === 1)
    const refused = await server.call('POST', '/rag/ingest', { token, body: { collection: 'refused', documents: documents(12, 'refused') } })
    hold.abort()
    expect(await Promise.all(held)).toEqual(['stopped', 'stopped'])
    expect(refused.status).toBe(503)
    expect(refused.json).toMatchObject({ error: true, code: 'BUSY' })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(collectionCount('refused')).toBe(0)
    // A search query is embedded on the request thread: it is answered while the pool is full.
    const search = await server.call('POST', '/rag/search', { token, body: { collection: 'pooled', query: 'harbour office keys' } })
    expect(search.status).toBe(200)
    expect(search.json.results.length).toBeGreaterThan(0)
  })

  test('a client that goes away while its embedding waits for a worker: the task leaves the queue, nothing is written', async () => {
    const { accessToken: token } = await server.login()
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')
    await until(() => pool.state().busy === 1)
    await abortWhileQueued((signal) => ingestOverHttp(token, { collection: 'gone', documents: documents(40, 'gone') }, signal))
    hold.abort()
    expect(await held).toBe('stopped')
    await Bun.sleep(200)
    // Stopped before its first batch was embedded: the new collection was never made.
    expect(collectionCount('gone')).toBe(0)
    expect(done.filter((task) => task.kind === 'onnx-embed').map((task) => task.outcome)).toEqual(['ok', 'cancelled'])
  })

  test('a client that goes away during a large ingest: the running embedding stops, nothing more is written, every document kept is whole', async () => {
    const { accessToken: token } = await server.login()
    const sent = documents(1000, 'large')
    const options = chunkOptionsFor((await server.services.models.embedder()).maxTokens)
    const expectedChunks = new Map(sent.map((d) => [d.id, chunkDocument(d.content, options).length]))
    const okBefore = done.filter((task) => task.kind === 'onnx-embed' && task.outcome === 'ok').length
    const client = new AbortController()
    const request = ingestOverHttp(token, { collection: 'large', documents: sent }, client.signal)
    // Once a batch or two are written, while the next is embedded.
    await until(() => done.filter((task) => task.kind === 'onnx-embed' && task.outcome === 'ok').length >= okBefore + 2 && pool.state().busy === 1)
    const cancelledBefore = pool.state().cancelled
    client.abort()
    expect(await request).toBe('AbortError')
    await until(() => pool.state().cancelled === cancelledBefore + 1)
    // It stopped in its worker between two runs of the model: the worker, its model loaded, stays.
    expect(pool.state()).toMatchObject({ queued: 0, busy: 0, started: 1 })
    const kept = stored('large')
    await Bun.sleep(300)
    expect(stored('large')).toEqual(kept)
    // Whole batches were written before the abort, and nothing after: some documents, not all, each whole.
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.length).toBeLessThan(sent.length)
    expect(kept.map((d) => d.doc_id)).toEqual(sent.slice(0, kept.length).map((d) => d.id))
    for (const document of kept) expect(document).toEqual({ doc_id: document.doc_id, chunks: expectedChunks.get(document.doc_id)!, vectors: expectedChunks.get(document.doc_id)!, info: 1 })
    // The collection lists what is there, and the next ingest is served.
    const listed = await server.call('GET', '/rag/collections/large/documents?limit=1000', { token })
    expect(listed.json.total).toBe(kept.length)
    const next = await server.call('POST', '/rag/ingest', { token, body: { collection: 'large', documents: documents(3, 'after') } })
    expect(next.status).toBe(200)
    expect(next.json.ingested).toBe(3)
  })

  test('a worker that dies fails its own ingest with 500 INTERNAL_ERROR (logged); the next ingest is embedded', async () => {
    const { accessToken: token } = await server.login()
    const crashing = documents(12, 'crash').map((d, i) => (i === 3 ? { ...d, content: `${d.content}\n\ncrash now` } : d))
    const crashed = await server.call('POST', '/rag/ingest', { token, body: { collection: 'crashed', documents: crashing } })
    expect(crashed.status).toBe(500)
    expect(crashed.json).toMatchObject({ error: true, code: 'INTERNAL_ERROR' })
    expect(String(crashed.json.message)).toContain('crash task stopped (exit code 7)')
    expect(logged.some((line) => line.includes('while running a crash task'))).toBe(true)
    expect(collectionCount('crashed')).toBe(0)
    const next = await server.call('POST', '/rag/ingest', { token, body: { collection: 'crashed', documents: documents(12, 'fine') } })
    expect(next.status).toBe(200)
    expect(next.json).toMatchObject({ ingested: 12, failed: 0 })
  })

  test('an upload whose client goes away while its embedding waits for a worker: it leaves the queue, nothing is written', async () => {
    const { accessToken: token } = await server.login()
    const text = documents(20, 'file').map((d) => d.content).join('\n\n')
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')
    await until(() => pool.state().busy === 1)
    try {
      // A plain upload (no job: its client waits for the answer).
      await abortWhileQueued((signal) =>
        outcome(
          fetch(`http://127.0.0.1:${listening.server!.port}/rag/collections/uploaded/files`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}` },
            body: formOf([['handbook.txt', text]]),
            signal,
          }),
        ),
      )
      expect(collectionCount('uploaded')).toBe(0)

    } finally {
      hold.abort()
      await held
    }
  })

  test('POST /v1/embeddings of many inputs is embedded on the pool, and leaves it when its client goes away', async () => {
    const { accessToken: token } = await server.login()
    const input = documents(20, 'v1').map((d) => d.content.slice(0, 300))
    const post = (signal?: AbortSignal) =>
      fetch(`http://127.0.0.1:${listening.server!.port}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fixtures/tiny-bert', input }),
        signal,
      })
    const okBefore = done.filter((task) => task.kind === 'onnx-embed' && task.outcome === 'ok').length
    const answered = await post()
    expect(answered.status).toBe(200)
    expect(((await answered.json()) as { data: unknown[] }).data).toHaveLength(20)
    expect(done.filter((task) => task.kind === 'onnx-embed' && task.outcome === 'ok').length).toBe(okBefore + 1)
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')
    try {
      await until(() => pool.state().busy === 1)
      await abortWhileQueued((signal) => outcome(post(signal)))
    } finally {
      hold.abort()
      await held
    }
  })

  test('a job cancelled by its owner while its embedding waits for a worker (a job waits, however long the queue): it leaves the queue, nothing is written', async () => {
    const jobs = makeServer({ ...OPTIONS, env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, readHere)
    try {
      const { accessToken: token } = await jobs.login()
      const hold = new AbortController()
      const held = jobs.services.pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')
      const text = documents(20, 'job').map((d) => d.content).join('\n\n')
      const accepted = await jobs.app.handle(new Request('http://localhost/rag/collections/job/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: formOf([['handbook.txt', text]]) }))
      expect(accepted.status).toBe(202)
      const { jobId } = (await accepted.json()) as { jobId: string }
      await until(() => jobs.services.pool.state().queued === 1)
      const cancelled = await jobs.call('DELETE', `/rag/jobs/${jobId}`, { token })
      expect(cancelled.status).toBe(200)
      expect(cancelled.json.status).toBe('cancelled')
      await until(() => jobs.services.pool.state().cancelled === 1)
      expect(jobs.services.pool.state()).toMatchObject({ queued: 0, busy: 1 })
      hold.abort()
      expect(await held).toBe('stopped')
      expect(jobs.services.db.query('SELECT count(*) AS n FROM rag_collections').get()).toEqual({ n: 0 })
    } finally {
      jobs.services.ingestJobs.close()
      jobs.services.pool.close()
      jobs.services.agents.close()
      jobs.services.db.close()
    }
  })

  test('Prometheus shows the cancelled embeddings, and the requests whose client went away as 499', async () => {
    const { accessToken: token } = await server.login()
    const metrics = await server.call('GET', '/metrics', { token })
    expect(metrics.status).toBe(200)
    expect(metrics.text).toMatch(/^uagent_work_seconds_count\{kind="onnx-embed",outcome="cancelled"[^}]*\} 4$/m)
    expect(metrics.text).toMatch(/^uagent_work_seconds_count\{kind="onnx-embed",outcome="ok"[^}]*\} [1-9]\d*$/m)
    expect(metrics.text).toMatch(/^uagent_http_requests_total\{method="POST",route="\/rag\/ingest",status="499"[^}]*\} 2$/m)
    expect(metrics.text).toMatch(/^uagent_http_requests_total\{method="POST",route="\/rag\/collections\/:name\/files",status="499"[^}]*\} 1$/m)
    await Bun.sleep(300) // /health is re-probed at most every 250 ms
    const health = await server.call('GET', '/health')
    expect(health.json.workers).toMatchObject({ queued: 0, busy: 0 })
    expect(health.json.workers.cancelled).toBeGreaterThanOrEqual(4)
  })
})
