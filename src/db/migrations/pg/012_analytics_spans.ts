import type { PostgresMigration } from '.'

// Each minute's span of record ids, as in SQLite's migration 12: a range of time is read as a
// range of ids. Servers writing at once widen a minute's span (least first id, greatest last id).
export const analyticsSpans: PostgresMigration = {
  version: 12,
  name: 'analytics_spans',
  sql: `
    CREATE TABLE analytics_spans (
      minute BIGINT PRIMARY KEY,
      first_id BIGINT NOT NULL,
      last_id BIGINT NOT NULL
    );
  `,
}
