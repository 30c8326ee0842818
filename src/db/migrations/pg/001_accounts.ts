import type { PostgresMigration } from '.'

// The SQLite schema of migration 001 (accounts), with identifiers, emails and ISO times sorting
// byte by byte as in SQLite (COLLATE "C"). Login failures are kept in milliseconds (BIGINT).
export const accounts: PostgresMigration = {
  version: 1,
  name: 'accounts',
  sql: `
    CREATE TABLE users (
      id TEXT COLLATE "C" PRIMARY KEY,
      email TEXT COLLATE "C" NOT NULL UNIQUE,
      password_hash TEXT NOT NULL,
      roles TEXT NOT NULL,
      mfa_enabled INTEGER NOT NULL DEFAULT 0,
      mfa_secret TEXT,
      mfa_pending_secret TEXT,
      mfa_last_step BIGINT NOT NULL DEFAULT 0,
      created_at TEXT COLLATE "C" NOT NULL
    );
    CREATE TABLE sessions (
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      last_used_at TEXT NOT NULL,
      revoked_at TEXT,
      user_agent TEXT
    );
    CREATE INDEX sessions_user ON sessions(user_id);
    CREATE TABLE refresh_tokens (
      token_hash TEXT COLLATE "C" PRIMARY KEY,
      session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      used_at TEXT
    );
    CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id);
    CREATE TABLE login_failures (
      email TEXT COLLATE "C" NOT NULL,
      at BIGINT NOT NULL
    );
    CREATE INDEX login_failures_email ON login_failures(email, at);
    CREATE INDEX login_failures_at ON login_failures(at);
  `,
}
