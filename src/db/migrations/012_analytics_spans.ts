import type { Migration } from '.'

/**
 * The time index of the request records goes: it cost every recorded request a B-tree search,
 * about as much as writing the record itself. In its place, each minute's span of record ids
 * (the first and the last id of its records), kept by the recorder with each batch: a range of
 * time is then read as a range of ids (filtered by time), since records are stored in about the
 * order of time (each batch in time order; a request still running when later ones were stored
 * comes after them, and widens its minute's span).
 */
export const analyticsSpans: Migration = {
  version: 12,
  name: 'analytics_spans',
  sql: `
    CREATE TABLE analytics_spans (
      minute INTEGER PRIMARY KEY,
      first_id INTEGER NOT NULL,
      last_id INTEGER NOT NULL
    );
    INSERT INTO analytics_spans (minute, first_id, last_id)
      SELECT CAST(ts AS INTEGER) / 60000, min(id), max(id) FROM analytics_requests GROUP BY 1;
    DROP INDEX analytics_requests_time;
  `,
}
