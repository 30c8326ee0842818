import type { PostgresMigration } from '.'

// Several replicas on one database: every write to a collection (ingest, document deleted) bumps
// its version in the same transaction. A replica compares the version its in-memory vectors were
// loaded at with this one before a search, and loads what changed.
export const ragVersions: PostgresMigration = {
  version: 20,
  name: 'rag versions',
  sql: `
    ALTER TABLE rag_collections ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
  `,
}
