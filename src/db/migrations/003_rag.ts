import type { Migration } from '.'

/**
 * Collections, documents and chunks, with an FTS5 index over the chunks kept in step by
 * triggers. Vector tables (sqlite-vec vec0, one per embedding width) are created on first use
 * by the RAG store, each with a trigger that drops a chunk's vector when the chunk goes.
 */
export const rag: Migration = {
  version: 3,
  name: 'rag',
  sql: `
    CREATE TABLE rag_collections (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      embedder TEXT NOT NULL,
      dimensions INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      UNIQUE (user_id, name)
    );
    CREATE TABLE rag_documents (
      id INTEGER PRIMARY KEY,
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      doc_id TEXT NOT NULL,
      metadata TEXT NOT NULL,
      content_hash TEXT NOT NULL,
      created_at TEXT NOT NULL,
      UNIQUE (collection_id, doc_id)
    );
    CREATE TABLE rag_chunks (
      id INTEGER PRIMARY KEY,
      document_id INTEGER NOT NULL REFERENCES rag_documents(id) ON DELETE CASCADE,
      collection_id INTEGER NOT NULL,
      position INTEGER NOT NULL,
      content TEXT NOT NULL
    );
    CREATE INDEX rag_chunks_document ON rag_chunks(document_id);
    CREATE INDEX rag_chunks_collection ON rag_chunks(collection_id);
    CREATE VIRTUAL TABLE rag_fts USING fts5(
      content,
      content = 'rag_chunks',
      content_rowid = 'id',
      tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER rag_chunks_fts_insert AFTER INSERT ON rag_chunks BEGIN
      INSERT INTO rag_fts (rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER rag_chunks_fts_delete AFTER DELETE ON rag_chunks BEGIN
      INSERT INTO rag_fts (rag_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
  `,
}
