import type { PostgresMigration } from '.'

/** The audit log, as in SQLite's migration 41: ids are UUIDv7 (time-ordered), the paging cursor. */
export const auditEvents: PostgresMigration = {
  version: 41,
  name: 'audit_events',
  sql: `
    CREATE TABLE audit_events (
      id TEXT COLLATE "C" PRIMARY KEY,
      at TEXT COLLATE "C" NOT NULL,
      actor_id TEXT COLLATE "C",
      actor_email TEXT COLLATE "C",
      ip TEXT,
      action TEXT COLLATE "C" NOT NULL,
      target TEXT COLLATE "C",
      details TEXT NOT NULL DEFAULT '{}',
      request_id TEXT
    );
    CREATE INDEX audit_events_at ON audit_events(at);
    CREATE INDEX audit_events_action ON audit_events(action, id);
    CREATE INDEX audit_events_actor ON audit_events(actor_id, id);
    CREATE INDEX audit_events_actor_email ON audit_events(actor_email, id);
    CREATE INDEX audit_events_target ON audit_events(target, id);
  `,
}
