import type { PostgresMigration } from '.'

// Teams, as SQLite's migration 42: a stable public id (a UUID) for every collection, and the
// access list table. No entry is made: every existing collection stays private to its owner.
export const collectionShares: PostgresMigration = {
  version: 42,
  name: 'collection_shares',
  sql: `
    ALTER TABLE rag_collections ADD COLUMN public_id TEXT COLLATE "C";
    UPDATE rag_collections SET public_id = gen_random_uuid()::text;
    ALTER TABLE rag_collections ALTER COLUMN public_id SET NOT NULL;
    CREATE UNIQUE INDEX rag_collections_public_id ON rag_collections(public_id);
    CREATE INDEX rag_collections_name ON rag_collections(name);
    CREATE TABLE rag_collection_shares (
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      principal_type TEXT COLLATE "C" NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT COLLATE "C" NOT NULL DEFAULT '',
      role TEXT COLLATE "C" NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (collection_id, principal_type, principal_id)
    );
    CREATE INDEX rag_collection_shares_principal ON rag_collection_shares(principal_type, principal_id);
  `,
}
