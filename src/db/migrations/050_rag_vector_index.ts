import type { Database } from 'bun:sqlite'
import type { Migration } from '.'

/**
 * The approximate vector index of large collections (issue 54; see store/sqlite/vector-index.ts):
 * - rag_vector_rows: every chunk's vector once more, in a plain table keyed by the chunk id, written
 *   in the same transaction as the vec0 row (and deleted with the chunk): a point look-up there
 *   costs microseconds, where vec0 reads a whole 128-vector blob (~0.4 ms). The index's candidates
 *   and keyword-only candidates are rescored exactly from it, and index builds read it.
 * - rag_vector_indexes: per indexed collection, the index file it is served by and what that file
 *   must agree with (the change it was built up to, its rows, bytes and checksum).
 * - rag_vector_changes: each chunk added to or removed from an indexed collection, in the write's
 *   own transaction: what the index file does not hold yet. A crash between a commit and the index
 *   update leaves it here, and the next start applies it.
 * Vectors already stored are copied into rag_vector_rows from each sqlite-vec table.
 */
export const ragVectorIndex: Migration = {
  version: 50,
  name: 'rag_vector_index',
  before(db: Database) {
    db.run('CREATE TABLE IF NOT EXISTS rag_vector_rows (chunk_id INTEGER PRIMARY KEY, collection_id INTEGER NOT NULL, embedding BLOB NOT NULL)')
    const tables = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'rag_vec_[0-9]*' AND sql LIKE '%vec0%'").all()
    for (const { name } of tables) {
      db.transaction(() => db.run(`INSERT OR IGNORE INTO rag_vector_rows (chunk_id, collection_id, embedding) SELECT rowid, collection_id, embedding FROM ${name}`))()
    }
  },
  sql: `
    CREATE TABLE IF NOT EXISTS rag_vector_rows (chunk_id INTEGER PRIMARY KEY, collection_id INTEGER NOT NULL, embedding BLOB NOT NULL);
    CREATE INDEX IF NOT EXISTS rag_vector_rows_collection ON rag_vector_rows(collection_id);
    CREATE TRIGGER rag_vector_rows_cleanup AFTER DELETE ON rag_chunks BEGIN DELETE FROM rag_vector_rows WHERE chunk_id = old.id; END;
    CREATE TABLE rag_vector_indexes (
      collection_id INTEGER PRIMARY KEY,
      file TEXT,
      built_seq INTEGER NOT NULL DEFAULT 0,
      rows INTEGER NOT NULL DEFAULT 0,
      bytes INTEGER NOT NULL DEFAULT 0,
      checksum TEXT,
      built_at TEXT
    );
    CREATE TABLE rag_vector_changes (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      collection_id INTEGER NOT NULL,
      chunk_id INTEGER NOT NULL,
      added INTEGER NOT NULL
    );
    CREATE INDEX rag_vector_changes_collection ON rag_vector_changes(collection_id, seq);
  `,
}
