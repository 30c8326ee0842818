import type { PostgresMigration } from '.'

// A chunk row of a 1,000-character chunk (its text and its tsvector) is about 2.5 kB: past the
// 2 kB at which PostgreSQL tries to compress a row's values (pglz), which cost ingest more than
// writing the rows did (7,500 such rows: 0.95 s with it, 0.18 s without). Rows up to a page stay
// whole and uncompressed; larger ones are still moved out of line as before. Searches read
// these rows' tsvectors too: now without decompressing them. The keyword index's list of entries
// not merged yet (GIN's fast update) may grow to 4 MB again (migration 4 kept it to 256 kB): the
// RAG store merges it itself after each ingest (PostgresRagStore.mergeIndex), so searches no longer
// find it long, and one merge of 4 MB costs about what one of 256 kB did.
export const ragChunkStorage: PostgresMigration = {
  version: 200,
  name: 'rag chunk storage',
  sql: `
    ALTER TABLE rag_chunks SET (toast_tuple_target = 8160);
    ALTER INDEX rag_chunks_tsv SET (gin_pending_list_limit = 4096);
  `,
}
