import type { Database } from 'bun:sqlite'
import type { Migration, MigrationContext } from '.'

const RECORD_TABLES = ['analytics_strings', 'analytics_records', 'analytics_spans', 'analytics_hourly']

/**
 * Copies the request records of a server database that still holds them into analytics.db beside
 * it, before the migration drops them here. Only into an analytics.db without records: a copy
 * committed before a crash, whose drop did not follow, is not made twice.
 */
function moveAnalyticsOut(db: Database, context: MigrationContext): void {
  const file = db.filename
  if (!file || file === ':memory:') return
  if (!db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'analytics_records'").get()) return
  if (!db.query('SELECT 1 FROM analytics_records LIMIT 1').get() && !db.query('SELECT 1 FROM analytics_hourly LIMIT 1').get()) return
  const target = context.analyticsPath(file)
  context.openAnalytics(target).close()
  db.run('ATTACH DATABASE ? AS moving', [target])
  try {
    db.transaction(() => {
      if (db.query('SELECT 1 FROM moving.analytics_records LIMIT 1').get() || db.query('SELECT 1 FROM moving.analytics_hourly LIMIT 1').get()) return
      for (const table of RECORD_TABLES) db.run(`INSERT INTO moving.${table} SELECT * FROM main.${table}`)
    }).immediate()
  } finally {
    db.run('DETACH DATABASE moving')
  }
}

/**
 * Request records leave the server's database for analytics.db beside it: the recorder's thread
 * writes them through a connection of its own, and two connections writing to one file made the
 * requests' transactions fail with SQLITE_BUSY (a deferred transaction cannot upgrade a read
 * snapshot that another connection has committed past) and wait behind each other. `before`
 * copies an existing database's records there first (outside this migration's transaction: SQLite
 * attaches a file only outside one); the tables then go from this database.
 */
export const analyticsMovedOut: Migration = {
  version: 14,
  name: 'analytics_moved_out',
  before: moveAnalyticsOut,
  sql: `
    DROP VIEW IF EXISTS analytics_requests;
    DROP TABLE IF EXISTS analytics_records;
    DROP TABLE IF EXISTS analytics_strings;
    DROP TABLE IF EXISTS analytics_spans;
    DROP TABLE IF EXISTS analytics_hourly;
  `,
}
