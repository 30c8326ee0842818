import type { Migration } from '.'

/**
 * Request records keep their strings (method, route, user id, model) as ids into one table of
 * strings: a record is written as numbers only, about 35 bytes on disk where the strings made
 * it about 80 (a user id alone is 36), and SQLite takes it in about two thirds of the time (the
 * writer thread's work per request: see the README's Analytics section).
 *
 * The records are in analytics_records now. analytics_requests becomes a view of them with
 * their strings, with the columns it had as a table, for whoever reads the records with SQL
 * (the export does too). Ids are kept, and with them the spans of migration 012.
 */
export const analyticsStrings: Migration = {
  version: 13,
  name: 'analytics_strings',
  sql: `
    CREATE TABLE analytics_strings (
      id INTEGER PRIMARY KEY,
      value TEXT NOT NULL UNIQUE
    );
    INSERT INTO analytics_strings (value)
      SELECT method FROM analytics_requests
      UNION SELECT route FROM analytics_requests
      UNION SELECT user_id FROM analytics_requests WHERE user_id IS NOT NULL
      UNION SELECT model FROM analytics_requests WHERE model IS NOT NULL;
    CREATE TABLE analytics_records (
      id INTEGER PRIMARY KEY,
      ts INTEGER NOT NULL,
      method INTEGER NOT NULL,
      route INTEGER NOT NULL,
      status INTEGER NOT NULL,
      duration_ms REAL NOT NULL,
      user_id INTEGER,
      prompt_tokens INTEGER NOT NULL DEFAULT 0,
      completion_tokens INTEGER NOT NULL DEFAULT 0,
      model INTEGER
    );
    INSERT INTO analytics_records (id, ts, method, route, status, duration_ms, user_id, prompt_tokens, completion_tokens, model)
      SELECT r.id, r.ts, m.id, p.id, r.status, r.duration_ms, u.id, r.prompt_tokens, r.completion_tokens, o.id
      FROM analytics_requests r
      JOIN analytics_strings m ON m.value = r.method
      JOIN analytics_strings p ON p.value = r.route
      LEFT JOIN analytics_strings u ON u.value = r.user_id
      LEFT JOIN analytics_strings o ON o.value = r.model
      ORDER BY r.id;
    DROP TABLE analytics_requests;
    CREATE VIEW analytics_requests AS
      SELECT r.id, r.ts, m.value AS method, p.value AS route, r.status, r.duration_ms,
             u.value AS user_id, r.prompt_tokens, r.completion_tokens, o.value AS model
      FROM analytics_records r
      LEFT JOIN analytics_strings m ON m.id = r.method
      LEFT JOIN analytics_strings p ON p.id = r.route
      LEFT JOIN analytics_strings u ON u.id = r.user_id
      LEFT JOIN analytics_strings o ON o.id = r.model;
  `,
}
