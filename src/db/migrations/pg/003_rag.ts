import type { PostgresMigration } from '.'

// Collections, documents and chunks, as SQLite's migration 3 has them, and each chunk's vector
// (float32s, little-endian, as bytea; never compressed) in a table of its own, so that the chunk
// rows keyword search reads stay narrow: there is no vector index in the database, every replica
// searches the vectors in memory. user_id got its foreign key to users (ON DELETE CASCADE) in
// migration 018, once the accounts had moved to PostgreSQL.
export const rag: PostgresMigration = {
  version: 3,
  name: 'rag',
  sql: `
    CREATE TABLE rag_collections (
      id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL,
      name TEXT COLLATE "C" NOT NULL,
      embedder TEXT NOT NULL,
      dimensions INTEGER NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL,
      UNIQUE (user_id, name)
    );
    CREATE TABLE rag_documents (
      id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      doc_id TEXT COLLATE "C" NOT NULL,
      metadata TEXT NOT NULL,
      content_hash TEXT NOT NULL,
      created_at TEXT NOT NULL,
      UNIQUE (collection_id, doc_id)
    );
    CREATE TABLE rag_chunks (
      id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      document_id INTEGER NOT NULL REFERENCES rag_documents(id) ON DELETE CASCADE,
      collection_id INTEGER NOT NULL,
      position INTEGER NOT NULL,
      content TEXT NOT NULL
    );
    CREATE INDEX rag_chunks_document ON rag_chunks(document_id);
    CREATE INDEX rag_chunks_collection ON rag_chunks(collection_id, id);
    CREATE TABLE rag_vectors (
      chunk_id INTEGER PRIMARY KEY REFERENCES rag_chunks(id) ON DELETE CASCADE,
      collection_id INTEGER NOT NULL,
      embedding BYTEA NOT NULL
    );
    ALTER TABLE rag_vectors ALTER COLUMN embedding SET STORAGE EXTERNAL;
    CREATE INDEX rag_vectors_collection ON rag_vectors(collection_id);
  `,
}
