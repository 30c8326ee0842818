import type { PostgresMigration } from '.'

/** Single sign-on's tables, as in SQLite (migration 044): external identities, device codes, OIDC sign-ins under way. */
export const singleSignOn: PostgresMigration = {
  version: 44,
  name: 'single_sign_on',
  sql: `
    CREATE TABLE external_identities (
      provider TEXT COLLATE "C" NOT NULL CHECK (provider IN ('oidc', 'ldap')),
      subject TEXT COLLATE "C" NOT NULL,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      issuer TEXT NOT NULL DEFAULT '',
      email TEXT,
      created_at TEXT NOT NULL,
      last_login_at TEXT NOT NULL,
      PRIMARY KEY (provider, subject)
    );
    CREATE INDEX external_identities_user ON external_identities(user_id);
    CREATE TABLE device_codes (
      device_code_hash TEXT COLLATE "C" PRIMARY KEY,
      user_code TEXT COLLATE "C" NOT NULL UNIQUE,
      status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
      user_id TEXT COLLATE "C" REFERENCES users(id) ON DELETE CASCADE,
      client_name TEXT,
      interval_seconds INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      last_poll_at BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE oidc_logins (
      state TEXT COLLATE "C" PRIMARY KEY,
      nonce TEXT NOT NULL,
      code_verifier TEXT NOT NULL,
      return_to TEXT NOT NULL DEFAULT '/app',
      expires_at BIGINT NOT NULL
    );
  `,
}
