import type { PostgresMigration } from '.'

// With pgvector (src/modules/rag/store/postgres/vectors-pgvector.ts) a chunk's vector lives in
// rag_vectors' `vec` column (type vector, added at start by the server once the extension is in
// the database: a migration cannot name a type that may not exist), and `embedding` (the float32
// bytes the memory path reads) is NULL. A row holds one or the other, never neither.
// rag_vector_layout remembers that every vector was moved into `vec` (a start need not look through
// the table for rows still to move).
export const ragVectorColumn: PostgresMigration = {
  version: 60,
  name: 'rag vector column',
  sql: `
    ALTER TABLE rag_vectors ALTER COLUMN embedding DROP NOT NULL;
    CREATE TABLE rag_vector_layout (name TEXT PRIMARY KEY, value TEXT NOT NULL, changed_at TEXT NOT NULL);
  `,
}
