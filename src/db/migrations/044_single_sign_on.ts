import type { Migration } from '.'

/**
 * Single sign-on. `external_identities` ties an account of a provider (`oidc`: the ID token's
 * issuer and `sub`; `ldap`: the directory entry's DN) to a user. `device_codes` are the CLI's
 * browser sign-ins (`uagent login --web`), and `oidc_logins` the browser sign-ins under way
 * (state, nonce, PKCE verifier): both in the database so that any replica finishes what another
 * began, and each is used once (deleted or marked as it is used).
 */
export const singleSignOn: Migration = {
  version: 44,
  name: 'single_sign_on',
  sql: `
    CREATE TABLE external_identities (
      provider TEXT NOT NULL CHECK (provider IN ('oidc', 'ldap')),
      subject TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      issuer TEXT NOT NULL DEFAULT '',
      email TEXT,
      created_at TEXT NOT NULL,
      last_login_at TEXT NOT NULL,
      PRIMARY KEY (provider, subject)
    );
    CREATE INDEX external_identities_user ON external_identities(user_id);
    CREATE TABLE device_codes (
      device_code_hash TEXT PRIMARY KEY,
      user_code TEXT NOT NULL UNIQUE,
      status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
      user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
      client_name TEXT,
      interval_seconds INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      last_poll_at INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE oidc_logins (
      state TEXT PRIMARY KEY,
      nonce TEXT NOT NULL,
      code_verifier TEXT NOT NULL,
      return_to TEXT NOT NULL DEFAULT '/app',
      expires_at INTEGER NOT NULL
    );
  `,
}
