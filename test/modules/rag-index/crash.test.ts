// kill -9 of a server while it ingests into a collection served by an approximate index: after the
// restart, the index agrees with the table (every stored vector in it, nothing else), and every
// document whose ingest was acknowledged is there and found.
import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { scaleDocuments } from '../../../bench/rag-scale-corpus'
import { INDEX_SETTINGS, loadIndexLibrary } from '../../../src/modules/rag/store/sqlite/vector-index-library'
import { trackProcess } from '../../processes'
import { tempDir } from '../../temp'

setDefaultTimeout(120_000)

const ADMIN = { email: 'crash@example.com', password: 'crash-password-1' }
const started: Bun.Subprocess[] = []
afterAll(async () => {
  for (const proc of started) {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    await proc.exited
  }
})

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) env[key] = value
  return env
}

async function startServer(dataDir: string) {
  const proc = Bun.spawn(['bun', join(import.meta.dir, '../../../src/index.ts')], {
    env: {
      ...cleanEnv(),
      PORT: '0',
      UAGENT_DATA_DIR: dataDir,
      UAGENT_ADMIN_EMAIL: ADMIN.email,
      UAGENT_ADMIN_PASSWORD: ADMIN.password,
      UAGENT_ANN_MIN_CHUNKS: '300',
      UAGENT_RATE_LIMIT_MAX: '1000000',
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  started.push(proc)
  trackProcess(proc)
  const reader = proc.stdout.getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server exited before listening: ${output}${await new Response(proc.stderr).text()}`)
    output += new TextDecoder().decode(value)
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  const base = /listening on (http:\/\/\S+)/.exec(output)![1]!
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()) as { accessToken: string }
  const headers = { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }
  return { proc, base, headers }
}

describe('kill -9 during an ingest into an indexed collection', () => {
  test('after the restart the index agrees with the table, and no acknowledged document is lost', async () => {
    const dataDir = tempDir('ann-crash')
    const first = await startServer(dataDir)
    const acknowledged: string[] = []
    // Enough for an index first (300 chunks), then batches until the kill.
    let stop = false
    const ingesting = (async () => {
      for (let from = 0; !stop && from < 20_000; from += 200) {
        const documents = scaleDocuments(from, from + 200, 11)
        try {
          const response = await fetch(`${first.base}/rag/ingest`, { method: 'POST', headers: first.headers, body: JSON.stringify({ collection: 'library', documents }) })
          if (!response.ok) throw new Error(`ingest: ${response.status} ${await response.text()}`)
          acknowledged.push(...documents.map((document) => document.id))
        } catch (error) {
          if (stop) return
          throw error
        }
      }
    })()
    // The index is built (and merged) while the ingest goes on; the kill lands mid-ingest.
    const ingestFailed = ingesting.then(() => {
      throw new Error('the ingest ended before the kill')
    })
    while (acknowledged.length < 2_400) await Promise.race([Bun.sleep(20), ingestFailed])
    first.proc.kill('SIGKILL')
    stop = true
    await ingesting
    await first.proc.exited
    expect(acknowledged.length).toBeGreaterThanOrEqual(2_400)

    const second = await startServer(dataDir)
    const deadline = Date.now() + 60_000
    let state: { path: string; indexes: { ready: number; building: number } } | undefined
    for (;;) {
      const info = (await (await fetch(`${second.base}/system/info`, { headers: second.headers })).json()) as { vectorSearch: typeof state }
      state = info.vectorSearch
      if ((state!.indexes.ready === 1 && state!.indexes.building === 0) || Date.now() > deadline) break
      await Bun.sleep(100)
    }
    expect(state).toMatchObject({ path: 'usearch', indexes: { ready: 1, building: 0 } })
    // Every acknowledged document is there; a sample of them is found first by its own text.
    const listed = (await (await fetch(`${second.base}/rag/collections`, { headers: second.headers })).json()) as { collections: { name: string; documents: number }[] }
    expect(listed.collections.find((collection) => collection.name === 'library')!.documents).toBeGreaterThanOrEqual(acknowledged.length)
    for (const id of [acknowledged[0]!, acknowledged[1_000]!, acknowledged[acknowledged.length - 1]!]) {
      const i = Number(id.slice('scale-'.length))
      const query = scaleDocuments(i, i + 1, 11)[0]!.content
      const { results } = (await (await fetch(`${second.base}/rag/search`, { method: 'POST', headers: second.headers, body: JSON.stringify({ collection: 'library', query, limit: 3 }) })).json()) as { results: { id: string }[] }
      expect(results[0]!.id).toBe(id)
    }
    // Wait for the pending changes to reach a file, then stop the server cleanly and compare file and table.
    await Bun.sleep(1_500)
    for (;;) {
      const info = (await (await fetch(`${second.base}/system/info`, { headers: second.headers })).json()) as { vectorSearch: { indexes: { building: number }; pendingBytes: number } }
      if ((info.vectorSearch.indexes.building === 0 && info.vectorSearch.pendingBytes === 0) || Date.now() > deadline + 30_000) break
      await Bun.sleep(100)
    }
    second.proc.kill('SIGTERM')
    expect(await second.proc.exited).toBe(0)
    const db = new Database(join(dataDir, 'uagent.db'), { readonly: true })
    try {
      const recorded = db.query<{ collection_id: number; file: string; rows: number; built_seq: number }, []>('SELECT collection_id, file, rows, built_seq FROM rag_vector_indexes').get()!
      const ids = db.query<{ chunk_id: number }, [number]>('SELECT chunk_id FROM rag_vector_rows WHERE collection_id = ?').all(recorded.collection_id).map((row) => row.chunk_id)
      const pending = db.query<{ n: number }, [number, number]>('SELECT count(*) AS n FROM rag_vector_changes WHERE collection_id = ? AND seq > ?').get(recorded.collection_id, recorded.built_seq)!.n
      expect(pending).toBe(0)
      const usearch = loadIndexLibrary()!
      const index = new usearch.Index({ dimensions: 384, ...INDEX_SETTINGS })
      index.load(join(dataDir, 'vector-index', recorded.file))
      expect(index.size()).toBe(ids.length)
      expect(recorded.rows).toBe(ids.length)
      expect(ids.every((id) => index.contains(BigInt(id)))).toBe(true)
    } finally {
      db.close()
    }
  })
})
