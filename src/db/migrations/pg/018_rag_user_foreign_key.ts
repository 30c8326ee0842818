import type { PostgresMigration } from '.'

/**
 * RAG collections name their owner by foreign key too, now that both are in PostgreSQL: deleting
 * a user deletes their collections, documents, chunks and vectors in the same statement (the RAG
 * store's own deletion step still drops what each server cached of them). NOT VALID, as in
 * migration 017: collections written before the accounts moved are kept, not checked.
 */
export const ragUserForeignKey: PostgresMigration = {
  version: 18,
  name: 'rag_user_foreign_key',
  sql: `
    ALTER TABLE rag_collections ADD CONSTRAINT rag_collections_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
  `,
}
