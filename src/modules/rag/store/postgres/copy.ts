import type { Database } from 'bun:sqlite'
import { CopyError } from '../../../../db/copy-to-postgres'
import type { Postgres } from '../../../../db/postgres'
import { keywordText } from './keywords'
import { INDEX_MIN_ROWS, PgvectorVectors, preparePgvector } from './vectors-pgvector'

/** Chunks (and vectors) a statement carries. */
const BATCH = 2000

const tokenCount = (text: string) => (text ? text.split(' ').length : 0)

/**
 * What PostgreSQL's RAG store derives from the rows `uagent admin migrate-to-postgres` copied
 * (collections, documents, chunks, document details): each chunk's keyword text as a tsvector and
 * its token count (as writeDocuments makes them), every collection's document frequencies
 * (rag_terms), chunk and token counts, and the vectors, read from SQLite's vec0 tables (float32
 * bytes, as PostgreSQL keeps them); the keyword index merged and rag_chunks analyzed. Runs in the
 * copy's transaction; a vector count that differs from SQLite's undoes it. Returns the chunks
 * indexed and the vectors copied.
 */
export async function completeRagCopy(tx: Postgres, sqlite: Database): Promise<{ chunks: number; vectors: number }> {
  let chunks = 0
  let batch: { id: number; content: string }[] = []
  const index = async () => {
    if (!batch.length) return
    const texts = batch.map((chunk) => keywordText(chunk.content))
    await tx.unsafe(
      `UPDATE rag_chunks c SET tokens = x.tokens, tsv = to_tsvector('rag_english'::regconfig, x.text)
       FROM unnest($1::int[], $2::int[], $3::text[]) AS x(id, tokens, text) WHERE c.id = x.id`,
      [batch.map((chunk) => chunk.id), texts.map(tokenCount), texts],
    )
    chunks += batch.length
    batch = []
  }
  for (const chunk of sqlite.query<{ id: number; content: string }, []>('SELECT id, content FROM rag_chunks ORDER BY id').iterate()) {
    batch.push(chunk)
    if (batch.length === BATCH) await index()
  }
  await index()

  let vectors = 0
  const tables = sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'rag_vec_[0-9]*' AND sql LIKE 'CREATE VIRTUAL TABLE%'").all()
  for (const { name } of tables) {
    let rows: { id: number; collection: number; embedding: Uint8Array }[] = []
    const send = async () => {
      if (!rows.length) return
      await tx.unsafe('INSERT INTO rag_vectors (chunk_id, collection_id, embedding) SELECT * FROM unnest($1::int[], $2::int[], $3::bytea[])', [
        rows.map((row) => row.id),
        rows.map((row) => row.collection),
        rows.map((row) => row.embedding),
      ])
      vectors += rows.length
      rows = []
    }
    for (const row of sqlite.query<{ id: number; collection: number; embedding: Uint8Array }, []>(`SELECT rowid AS id, collection_id AS collection, embedding FROM ${name}`).iterate()) {
      rows.push(row)
      if (rows.length === BATCH) await send()
    }
    await send()
  }
  const [stored] = await tx.unsafe('SELECT count(*)::float8 AS n FROM rag_vectors')
  if (Number(stored.n) !== vectors) throw new CopyError(`rag_vectors: ${vectors} vectors in uagent.db but ${stored.n} in PostgreSQL after the copy; the copy was undone`)

  await tx.unsafe(
    `INSERT INTO rag_terms (collection_id, lexeme, df)
     SELECT c.collection_id, l.lexeme, count(*)::int FROM rag_chunks c CROSS JOIN LATERAL unnest(c.tsv) l GROUP BY 1, 2 ORDER BY 1, 2`,
  )
  await tx.unsafe(
    `UPDATE rag_collections r SET chunk_count = s.n, token_count = s.t, version = r.version + 1
     FROM (SELECT collection_id, count(*) AS n, coalesce(sum(tokens), 0) AS t FROM rag_chunks GROUP BY 1) s WHERE r.id = s.collection_id`,
  )
  // Searches after the copy read a merged keyword index (no pending list: see PostgresRagStore.mergesIndex) and plan with the copied rows' statistics.
  await tx.unsafe(`SELECT gin_clean_pending_list(c.oid::regclass) FROM pg_class c WHERE c.oid = 'rag_chunks_tsv'::regclass AND pg_has_role(c.relowner, 'USAGE')`)
  await tx.unsafe('ANALYZE rag_chunks')
  return { chunks, vectors }
}

/**
 * After the copy (committed): with pgvector in the database (created when this role may), the
 * copied vectors move into its column (as a server does at start, see preparePgvector), and each
 * collection of more than INDEX_MIN_ROWS chunks gets its HNSW index now rather than after the
 * first server's first search of it. Without it the vectors stay where the in-memory path reads them.
 */
export async function vectorsIntoPgvector(sql: Postgres, log: (line: string) => void = () => {}): Promise<{ path: 'pgvector' | 'in-memory'; reason: string; indexed: number }> {
  const setup = await preparePgvector(sql, log)
  if (setup.kind !== 'pgvector') return { path: 'in-memory', reason: setup.reason, indexed: 0 }
  const large = await sql`SELECT id FROM rag_collections WHERE chunk_count > ${INDEX_MIN_ROWS} ORDER BY id`
  const vectors = new PgvectorVectors(sql, async () => null, { log })
  for (const row of large) await vectors.indexCollection(Number(row.id))
  vectors.close()
  return { path: 'pgvector', reason: setup.reason, indexed: vectors.builds.length }
}
