import type { PostgresMigration } from '.'

/**
 * Ingestion jobs, as in SQLite; the uploaded bytes of each file (`data`) are kept here until it is
 * done, so that any replica can run (or resume) a job queued on another. `seq` orders jobs made in
 * the same millisecond; `heartbeat_at` is the database's clock.
 */
export const ingestJobs: PostgresMigration = {
  version: 43,
  name: 'ingest_jobs',
  sql: `
    CREATE TABLE ingest_jobs (
      id TEXT COLLATE "C" PRIMARY KEY,
      seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      collection TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      progress INTEGER NOT NULL DEFAULT 0,
      error TEXT,
      owner TEXT,
      heartbeat_at TIMESTAMPTZ,
      created_at TEXT NOT NULL,
      started_at TEXT,
      finished_at TEXT
    );
    CREATE INDEX ingest_jobs_user ON ingest_jobs(user_id, created_at);
    CREATE INDEX ingest_jobs_queued ON ingest_jobs(seq) WHERE status = 'queued';
    CREATE INDEX ingest_jobs_running ON ingest_jobs(heartbeat_at) WHERE status = 'running';
    CREATE TABLE ingest_job_files (
      job_id TEXT COLLATE "C" NOT NULL REFERENCES ingest_jobs(id) ON DELETE CASCADE,
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
      data BYTEA,
      PRIMARY KEY (job_id, position)
    );
  `,
}
