// Which path serves vector search, as the server says it (/health, /system/info, /metrics, its log),
// and the settings that size it (UAGENT_VECTOR_CACHE_MB, UAGENT_ANN_MIN_CHUNKS, UAGENT_VECTOR_INDEX).
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../../src/config'
import { scaleDocuments } from '../../../bench/rag-scale-corpus'
import type { SqliteRagStore } from '../../../src/modules/rag/store/sqlite'
import { makeServer } from '../../helpers'
import { tempDir } from '../../temp'

function fileServer(env: Record<string, string> = {}) {
  const dataDir = tempDir('ann-serving')
  const lines: string[] = []
  const server = makeServer({ database: join(dataDir, 'uagent.db'), dataDir, env: { UAGENT_ANN_MIN_CHUNKS: '200', ...env }, log: (line) => lines.push(line) })
  return { ...server, lines }
}

describe('the vector search path, as the server says it', () => {
  test('with the index library: usearch in /health and /system/info, the start log, and the memory in /metrics', async () => {
    const server = fileServer()
    try {
      const health = await server.call('GET', '/health')
      expect(health.json.connections.vectorSearch).toBe('usearch')
      expect(server.lines.some((line) => line.includes('Vector search: collections of 200 chunks or more through an approximate index (usearch)'))).toBe(true)
      const admin = await server.login()
      const ingest = await server.call('POST', '/rag/ingest', { token: admin.accessToken, body: { collection: 'big', documents: scaleDocuments(0, 300) } })
      expect(ingest.status).toBe(200)
      const store = server.services.rag.store as SqliteRagStore
      store.indexes.flush()
      await store.indexes.settled(60_000)
      const info = await server.call('GET', '/system/info', { token: admin.accessToken })
      expect(info.json.vectorSearch).toMatchObject({ path: 'usearch', annMinChunks: 200, indexes: { ready: 1, building: 0 }, cacheBudgetBytes: 512 * 1024 * 1024 })
      expect(info.json.vectorSearch.mappedBytes).toBeGreaterThan(0)
      const search = await server.call('POST', '/rag/search', { token: admin.accessToken, body: { collection: 'big', query: scaleDocuments(17, 18)[0]!.content, limit: 3 } })
      expect(search.json.results[0].id).toBe('scale-17')
      const metrics = await server.call('GET', '/metrics', { token: admin.accessToken })
      expect(metrics.text).toMatch(/uagent_vector_cache_bytes\{state="budget"\} 536870912/)
      expect(metrics.text).toMatch(/uagent_vector_index_bytes\{state="mapped"\} [1-9]\d*/)
      expect(metrics.text).toMatch(/uagent_vector_index_bytes\{state="pending"\} \d+/)
      // Keyword top-k's kept postings (none: the collection is below its 50,000 chunks) and their budget.
      expect(metrics.text).toMatch(/uagent_keyword_postings_bytes\{state="used"\} 0/)
      expect(metrics.text).toMatch(/uagent_keyword_postings_bytes\{state="budget"\} 134217728/)
    } finally {
      ;(server.services.rag.store as SqliteRagStore).close()
    }
  })

  test('turned off: exact, and why, in /health, /system/info and the start log', async () => {
    const server = fileServer({ UAGENT_VECTOR_INDEX: 'off', UAGENT_VECTOR_CACHE_MB: '64', UAGENT_KEYWORD_POSTINGS_MB: '32' })
    const health = await server.call('GET', '/health')
    expect(health.json.connections.vectorSearch).toBe('exact')
    expect(health.json.status).toBe('healthy')
    const info = await server.call('GET', '/system/info', { token: (await server.login()).accessToken })
    expect(info.json.vectorSearch).toMatchObject({ path: 'exact', reason: 'turned off (UAGENT_VECTOR_INDEX=off)', cacheBudgetBytes: 64 * 1024 * 1024 })
    expect(server.lines.some((line) => line.includes('Vector search: exact for every collection (turned off (UAGENT_VECTOR_INDEX=off))'))).toBe(true)
    const metrics = await server.call('GET', '/metrics', { token: (await server.login()).accessToken })
    expect(metrics.text).toMatch(/uagent_keyword_postings_bytes\{state="budget"\} 33554432/)
  })
})

describe('vector search settings', () => {
  test('defaults', () => {
    const config = loadConfig({})
    expect(config.vectorCacheMb).toBe(512)
    expect(config.annMinChunks).toBe(50_000)
    expect(config.annExpansion).toBe(1024)
    expect(config.vectorIndex).toBe(true)
  })

  test('values are read and bad ones refused at start, naming the variable', () => {
    expect(loadConfig({ UAGENT_VECTOR_CACHE_MB: '0', UAGENT_ANN_MIN_CHUNKS: '1000', UAGENT_ANN_EXPANSION: '256', UAGENT_VECTOR_INDEX: 'off' })).toMatchObject({
      vectorCacheMb: 0,
      annMinChunks: 1000,
      annExpansion: 256,
      vectorIndex: false,
    })
    for (const [name, value] of [
      ['UAGENT_VECTOR_CACHE_MB', '-1'],
      ['UAGENT_VECTOR_CACHE_MB', '1.5'],
      ['UAGENT_VECTOR_CACHE_MB', '2000000'],
      ['UAGENT_ANN_MIN_CHUNKS', '0'],
      ['UAGENT_ANN_MIN_CHUNKS', 'many'],
      ['UAGENT_ANN_EXPANSION', '8'],
      ['UAGENT_ANN_EXPANSION', '100000'],
      ['UAGENT_VECTOR_INDEX', 'maybe'],
    ] as const) {
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
      expect(() => loadConfig({ [name]: value })).toThrow(name)
    }
  })
})
