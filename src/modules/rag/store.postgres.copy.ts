import type { Database } from 'bun:sqlite'
import type { Postgres } from '../../db/postgres'
import { keywordText } from './store.postgres'

const BATCH = 2000

/**
 * What a copy of SQLite's RAG tables into PostgreSQL (uagent admin migrate-to-postgres) cannot
 * carry row for row, made in the copy's transaction: each chunk's vector (SQLite keeps them in its
 * sqlite-vec tables, rag_vec_<dimensions>), its length in tokens and its tsvector, every
 * collection's document frequencies and chunk and token counts. Returns the chunks done.
 */
export async function completeRagCopy(tx: Postgres, source: Database, progress: (line: string) => void = () => {}): Promise<number> {
  const collections: { id: number; dimensions: number }[] = (await tx`SELECT id, dimensions FROM rag_collections ORDER BY id`).map((row: { id: number; dimensions: number }) => ({
    id: Number(row.id),
    dimensions: Number(row.dimensions),
  }))
  let vectors = 0
  for (const { id, dimensions } of collections) {
    const table = `rag_vec_${dimensions}`
    if (!source.query("SELECT 1 FROM sqlite_master WHERE name = ?").get(table)) continue
    const rows = source.query<{ rowid: number; embedding: Uint8Array }, [number]>(`SELECT rowid, embedding FROM ${table} WHERE collection_id = ?`).all(id)
    for (let i = 0; i < rows.length; i += BATCH) {
      const part = rows.slice(i, i + BATCH)
      await tx`INSERT INTO rag_vectors (chunk_id, collection_id, embedding)
        SELECT chunk_id, ${id}, embedding FROM unnest(${part.map((row) => row.rowid)}::int[], ${part.map((row) => new Uint8Array(row.embedding))}::bytea[]) AS x(chunk_id, embedding)`
      vectors += part.length
    }
  }
  progress(`rag_vectors: ${vectors} vectors from the sqlite-vec tables`)
  let chunks = 0
  const read = source.query<{ id: number; content: string }, [number, number]>('SELECT id, content FROM rag_chunks WHERE id > ? ORDER BY id LIMIT ?')
  for (let after = 0; ; ) {
    const rows = read.all(after, BATCH)
    if (!rows.length) break
    const texts = rows.map((row) => keywordText(row.content))
    await tx`UPDATE rag_chunks c SET tokens = x.tokens, tsv = to_tsvector('rag_english', x.text)
      FROM unnest(${rows.map((row) => row.id)}::int[], ${texts.map((text) => (text ? text.split(' ').length : 0))}::int[], ${texts}::text[]) AS x(id, tokens, text)
      WHERE c.id = x.id`
    chunks += rows.length
    after = rows.at(-1)!.id
  }
  await tx`INSERT INTO rag_terms (collection_id, lexeme, df)
    SELECT c.collection_id, l.lexeme, count(*)::int FROM rag_chunks c CROSS JOIN LATERAL unnest(c.tsv) l GROUP BY 1, 2`
  await tx`UPDATE rag_collections k SET chunk_count = s.n, token_count = s.t
    FROM (SELECT collection_id, count(*) AS n, coalesce(sum(tokens), 0) AS t FROM rag_chunks GROUP BY 1) s WHERE s.collection_id = k.id`
  progress(`rag_chunks: ${chunks} chunks indexed for keyword search`)
  return chunks
}
