import type { Migration } from '.'

/**
 * The audit log (issue 44): append-only, one row per event. `id` is a UUIDv7, so ids sort in
 * the order events happened and one id is the paging cursor. The actor's email is copied in, so
 * an event still names who did it after that account is deleted (no foreign key on purpose).
 * `details` is a JSON object.
 */
export const auditEvents: Migration = {
  version: 41,
  name: 'audit_events',
  sql: `
    CREATE TABLE audit_events (
      id TEXT PRIMARY KEY,
      at TEXT NOT NULL,
      actor_id TEXT,
      actor_email TEXT,
      ip TEXT,
      action TEXT NOT NULL,
      target TEXT,
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
