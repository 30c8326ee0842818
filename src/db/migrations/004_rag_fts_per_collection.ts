import type { Migration } from '.'

/**
 * Keyword indexes become one per collection (made and filled by the RAG store on first use), so
 * that BM25's statistics are each collection's own. The shared index and its triggers go.
 */
export const ragFtsPerCollection: Migration = {
  version: 4,
  name: 'rag fts per collection',
  sql: `
    DROP TRIGGER IF EXISTS rag_chunks_fts_insert;
    DROP TRIGGER IF EXISTS rag_chunks_fts_delete;
    DROP TABLE IF EXISTS rag_fts;
  `,
}
