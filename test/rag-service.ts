// A RagService over an in-memory database with one user, for tests and benches that work below HTTP.
import { openDatabase } from '../src/db'
import type { Embedder } from '../src/ml'
import { ExtractiveGenerator } from '../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { type RagDeps, RagService } from '../src/modules/rag/service'

export function inMemoryRag(options: { user?: string; embedder?: Embedder } & Pick<RagDeps, 'keywordPostings' | 'vectorCache' | 'synonyms'> = {}) {
  const db = openDatabase(':memory:')
  const user = options.user ?? 'u'
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, 'x', '[\"user\"]', '')", [user, `${user}@example.com`])
  const embedder = options.embedder ?? new HashEmbedder()
  const rag = new RagService({
    db,
    embedder: async () => embedder,
    generator: async () => new ExtractiveGenerator(),
    keywordPostings: options.keywordPostings,
    vectorCache: options.vectorCache,
    synonyms: options.synonyms,
  })
  return { db, rag, embedder }
}
