import type { Migration } from '.'

/**
 * One row per recorded request (or WebSocket message), and an hourly rollup of them kept in the
 * same transaction by the recorder. The dashboard and the hourly and daily metric series read the
 * rollup (a few rows per route, user and model each hour, whatever the traffic); the minute series
 * and the export read the records of their range through the time index. That index is the only
 * one on the records (each costs every recorded request a B-tree insert), and it grows at its end.
 */
export const analytics: Migration = {
  version: 7,
  name: 'analytics',
  sql: `
    CREATE TABLE analytics_requests (
      id INTEGER PRIMARY KEY,
      ts INTEGER NOT NULL,
      method TEXT NOT NULL,
      route TEXT NOT NULL,
      status INTEGER NOT NULL,
      duration_ms REAL NOT NULL,
      user_id TEXT,
      prompt_tokens INTEGER NOT NULL DEFAULT 0,
      completion_tokens INTEGER NOT NULL DEFAULT 0,
      model TEXT
    );
    CREATE INDEX analytics_requests_time ON analytics_requests(ts);
    CREATE TABLE analytics_hourly (
      hour INTEGER NOT NULL,
      method TEXT NOT NULL,
      route TEXT NOT NULL,
      user_id TEXT NOT NULL,
      model TEXT NOT NULL,
      requests INTEGER NOT NULL,
      failures INTEGER NOT NULL,
      duration_sum REAL NOT NULL,
      prompt_tokens INTEGER NOT NULL,
      completion_tokens INTEGER NOT NULL,
      PRIMARY KEY (hour, method, route, user_id, model)
    ) WITHOUT ROWID;
  `,
}
