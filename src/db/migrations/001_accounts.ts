import type { Migration } from '.'

export const accounts: Migration = {
  version: 1,
  name: 'accounts',
  sql: `
    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      email TEXT NOT NULL UNIQUE,
      password_hash TEXT NOT NULL,
      roles TEXT NOT NULL,
      mfa_enabled INTEGER NOT NULL DEFAULT 0,
      mfa_secret TEXT,
      mfa_pending_secret TEXT,
      mfa_last_step INTEGER NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL
    );
    CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      last_used_at TEXT NOT NULL,
      revoked_at TEXT,
      user_agent TEXT
    );
    CREATE INDEX sessions_user ON sessions(user_id);
    CREATE TABLE refresh_tokens (
      token_hash TEXT PRIMARY KEY,
      session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      used_at TEXT
    );
    CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id);
    CREATE TABLE login_failures (
      email TEXT NOT NULL,
      at INTEGER NOT NULL
    );
    CREATE INDEX login_failures_email ON login_failures(email, at);
  `,
}
