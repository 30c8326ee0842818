import { describe, expect, test } from 'bun:test'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { THREAD_MIN_TEXTS, ThreadedHashEmbedder } from '../../src/ml/builtin/threaded-hash-embedder'

// Prose, code, accents, other scripts, repeated words, an empty text: every path of the tokenizer.
const SAMPLES = [
  'The cat sat on the mat.',
  'Connections, connected, connecting: the connection pool reconnects.',
  'SELECT * FROM pg_stat_activity WHERE state = \'idle in transaction\';',
  'Crème brûlée, naïve café, Ærø and the Straße.',
  'Журнал упреждающей записи и контрольные точки.',
  '日本語のテキストも埋め込まれる。',
  'git rebase --interactive HEAD~3 rewrites the last three commits.',
  '',
  'word '.repeat(400),
  "it's the user's o’clock: don't split it",
]
const texts = Array.from({ length: THREAD_MIN_TEXTS * 3 + 5 }, (_, i) => `${SAMPLES[i % SAMPLES.length]} ${i % 7 ? `note ${i}` : ''}`.trim())
const bytes = (vectors: Float32Array[]) => vectors.map((v) => [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)])

describe('built-in embedder on a worker thread', () => {
  test('a large batch is embedded on the thread, bit for bit as the built-in embedder embeds it', async () => {
    const threaded = new ThreadedHashEmbedder()
    const local = new HashEmbedder()
    expect(threaded.id).toBe(local.id)
    expect(threaded.dimensions).toBe(local.dimensions)
    try {
      const vectors = await threaded.embed(texts)
      expect(threaded.threaded).toBe(true)
      expect(vectors).toHaveLength(texts.length)
      expect(bytes(vectors)).toEqual(bytes(await local.embed(texts)))
      // A small call (a search query) stays on this thread, with the same vectors.
      expect(bytes(await threaded.embed(texts.slice(0, 3)))).toEqual(bytes(await local.embed(texts.slice(0, 3))))
    } finally {
      threaded.close()
    }
  })

  test('calls in flight when the thread stops are embedded here, and the next large call starts a new thread', async () => {
    const threaded = new ThreadedHashEmbedder()
    const expected = bytes(await new HashEmbedder().embed(texts))
    try {
      const pending = [threaded.embed(texts), threaded.embed(texts)]
      threaded.close()
      expect(threaded.threaded).toBe(false)
      for (const vectors of await Promise.all(pending)) expect(bytes(vectors)).toEqual(expected)
      expect(bytes(await threaded.embed(texts))).toEqual(expected)
      expect(threaded.threaded).toBe(true)
    } finally {
      threaded.close()
    }
  })
})
