import type { Migration } from '.'

/**
 * Teams: every collection gets a stable public `id` (a UUID: the integer row id may be handed to
 * a new collection once the old one is deleted, so it never leaves the server), and an access list
 * of users, groups and everyone, each with a role. No entry is made here: every existing
 * collection stays private to its owner.
 */
export const collectionShares: Migration = {
  version: 42,
  name: 'collection_shares',
  sql: `
    ALTER TABLE rag_collections ADD COLUMN public_id TEXT;
    UPDATE rag_collections SET public_id = lower(
      hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
      substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
    CREATE UNIQUE INDEX rag_collections_public_id ON rag_collections(public_id);
    CREATE INDEX rag_collections_name ON rag_collections(name);
    CREATE TABLE rag_collection_shares (
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      principal_type TEXT NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT NOT NULL DEFAULT '',
      role TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_at TEXT NOT NULL,
      PRIMARY KEY (collection_id, principal_type, principal_id)
    );
    CREATE INDEX rag_collection_shares_principal ON rag_collection_shares(principal_type, principal_id);
  `,
}
