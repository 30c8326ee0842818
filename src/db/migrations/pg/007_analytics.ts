import type { PostgresMigration } from '.'

// The hourly rollup of the request records, as in SQLite's migration 7: the dashboard and the
// hourly and daily series read it. Every server on the database adds its batches to the same rows
// (an upsert per hour, endpoint and caller), so one dashboard counts the requests of all of them.
// (SQLite's first records table became a view in 13: here it is that view from the start.)
export const analytics: PostgresMigration = {
  version: 7,
  name: 'analytics',
  sql: `
    CREATE TABLE analytics_hourly (
      hour BIGINT NOT NULL,
      method TEXT COLLATE "C" NOT NULL,
      route TEXT COLLATE "C" NOT NULL,
      user_id TEXT COLLATE "C" NOT NULL,
      model TEXT COLLATE "C" NOT NULL,
      requests BIGINT NOT NULL,
      failures BIGINT NOT NULL,
      duration_sum DOUBLE PRECISION NOT NULL,
      prompt_tokens BIGINT NOT NULL,
      completion_tokens BIGINT NOT NULL,
      PRIMARY KEY (hour, method, route, user_id, model)
    );
  `,
}
