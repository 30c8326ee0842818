import type { Migration } from '.'

/**
 * Ingestion jobs: an upload whose files need OCR or take long to read, worked on after the upload
 * was answered (202). Each file keeps its uploaded bytes (`data`) until it is done, so that a job
 * still queued or running when the server stopped is picked up again after a restart. `owner` and
 * `heartbeat_at` say which process runs it and that it is alive.
 */
export const ingestJobs: Migration = {
  version: 43,
  name: 'ingest_jobs',
  sql: `
    CREATE TABLE ingest_jobs (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      collection TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      progress INTEGER NOT NULL DEFAULT 0,
      error TEXT,
      owner TEXT,
      heartbeat_at TEXT,
      created_at TEXT NOT NULL,
      started_at TEXT,
      finished_at TEXT
    );
    CREATE INDEX ingest_jobs_user ON ingest_jobs(user_id, created_at);
    CREATE INDEX ingest_jobs_waiting ON ingest_jobs(created_at) WHERE status IN ('queued', 'running');
    CREATE TABLE ingest_job_files (
      job_id TEXT NOT NULL REFERENCES ingest_jobs(id) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      name TEXT NOT NULL,
      document_id TEXT NOT NULL,
      source TEXT,
      bytes INTEGER NOT NULL,
      content_hash TEXT NOT NULL,
      status TEXT NOT NULL,
      type TEXT,
      title TEXT,
      pages INTEGER,
      pages_done INTEGER,
      chunks INTEGER,
      reason TEXT,
      data BLOB,
      PRIMARY KEY (job_id, position)
    );
  `,
}
