import type { PostgresMigration } from '.'

// With the accounts in PostgreSQL (migration 001), a collection names its owner by foreign key, as
// in SQLite: deleting a user deletes their collections (and, by cascade, documents, chunks,
// vectors and term counts), and a collection of a user who does not exist is refused. NOT VALID,
// as migration 17 for the other stores: rows written while the accounts were elsewhere stay.
export const ragUserForeignKey: PostgresMigration = {
  version: 21,
  name: 'rag user foreign key',
  sql: `
    ALTER TABLE rag_collections ADD CONSTRAINT rag_collections_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
  `,
}
