import type { Command } from 'commander'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { analyticsPathFor, openAnalyticsDatabase } from '../../src/db'
import { CopyError, type CopySource, copyToPostgres } from '../../src/db/copy-to-postgres'
import { openPostgres, type Postgres, redactUrl } from '../../src/db/postgres'
import { liveServerPid } from '../../src/modules/admin/restore'
import { completeRagCopy, vectorsIntoPgvector } from '../../src/modules/rag/store/postgres/copy'
import { CliError, EXIT } from '../client'
import { dim, emit, example, table } from '../output'
import { dataDirOf, openExistingDatabase } from './admin'

/**
 * `uagent admin migrate-to-postgres`: a host operation, like `restore`, not a route. It reads
 * the SQLite files of a stopped server (a running one would go on writing rows the copy misses)
 * and needs only the data dir and the database URL, not a server.
 */
export function registerMigrateToPostgres(admin: Command): void {
  example(
    admin
      .command('migrate-to-postgres')
      .description(
        "Copy a stopped server's SQLite data (uagent.db and analytics.db) into an empty PostgreSQL database, in one transaction, table by table; the row counts of every table are checked (a difference undoes it all)",
      )
      .option('--data-dir <dir>', 'the data directory (UAGENT_DATA_DIR, default ./data)')
      .option('--database-url <url>', 'the PostgreSQL database (default UAGENT_DATABASE_URL); migrated first, and it must hold no rows')
      .option('--force', 'copy even though server.pid names a running process')
      .action(async (options: { dataDir?: string; databaseUrl?: string; force?: boolean }, command: Command) => {
        const dataDir = dataDirOf(options.dataDir)
        const url = options.databaseUrl?.trim() || process.env.UAGENT_DATABASE_URL?.trim()
        if (!url) throw new CliError('USAGE', 'name the PostgreSQL database with --database-url or UAGENT_DATABASE_URL', EXIT.usage)
        const pid = liveServerPid(dataDir)
        if (pid !== null && !options.force) throw new CliError('MIGRATION_REFUSED', `a server (pid ${pid}) is running on ${dataDir}: stop it first; nothing was changed`, EXIT.apiError)
        const db = openExistingDatabase(dataDir)
        const sources: CopySource[] = [{ name: 'uagent.db', db }]
        const recordsFile = analyticsPathFor(join(dataDir, 'uagent.db'))
        if (existsSync(recordsFile)) sources.push({ name: 'analytics.db', db: openAnalyticsDatabase(recordsFile) })
        let postgres: Postgres | null = null
        try {
          try {
            postgres = await openPostgres(url)
          } catch (error) {
            throw new CliError('DATABASE', (error as Error).message, EXIT.apiError)
          }
          const quiet = command.optsWithGlobals().json === true
          let report
          // The data dir's JWT key becomes the database's (server_secrets), so that tokens the
          // SQLite server signed stay valid on servers without UAGENT_JWT_SECRET.
          const keyFile = join(dataDir, 'jwt-secret')
          const key = existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : ''
          let keyMoved = false
          let rag: { chunks: number; vectors: number } | null = null
          try {
            report = await copyToPostgres(
              sources,
              postgres,
              (line) => {
                if (!quiet) console.error(dim(line))
              },
              async (tx, tables) => {
                // RAG's keyword index, counts and vectors, which PostgreSQL keeps its own way.
                if (tables.includes('rag_vectors')) rag = await completeRagCopy(tx, db)
                if (!key || !tables.includes('server_secrets')) return
                await tx.unsafe("INSERT INTO server_secrets (name, value, created_at) VALUES ('jwt', $1, $2) ON CONFLICT (name) DO NOTHING", [key, new Date().toISOString()])
                keyMoved = true
              },
            )
          } catch (error) {
            if (error instanceof CopyError) throw new CliError('MIGRATION_FAILED', error.message, EXIT.apiError)
            throw error
          }
          // With pgvector (created here when this role may): the copied vectors move into its column, and large collections get their index.
          const vectorSearch = await vectorsIntoPgvector(postgres, (line) => {
            if (!quiet) console.error(dim(line))
          })
          const body = { success: true, dataDir, database: redactUrl(url), ...report, jwtKeyMoved: keyMoved, rag, vectorSearch }
          emit(command, body, () => {
            console.log(table(['TABLE', 'FROM', 'SQLITE ROWS', 'POSTGRESQL ROWS'], report.copied.map((t) => [t.table, t.source, t.rows, t.copied])))
            console.log(`Copied ${report.copied.length} tables into ${redactUrl(url)}; every table's row count matches.`)
            for (const t of report.copied.filter((t) => t.leftOut.length)) console.log(`${t.table}: SQLite columns without a PostgreSQL column, not copied: ${t.leftOut.join(', ')}`)
            if (report.skipped.length) {
              console.log('SQLite tables not copied (their rows stay in the SQLite files):')
              console.log(table(['TABLE', 'FROM', 'ROWS', 'WHY'], report.skipped.map((s) => [s.table, s.source, s.rows ?? '?', s.why])))
            }
            // conversation_counts is kept by triggers as conversations are copied.
            const made = ['conversation_counts', ...(rag ? ['rag_terms', 'rag_vectors'] : []), ...(keyMoved ? ['server_secrets'] : [])]
            const empty = report.postgresOnly.filter((name) => !made.includes(name))
            if (empty.length) console.log(dim(`PostgreSQL tables no SQLite file has (left empty): ${empty.join(', ')}`))
            if (rag) console.log(`RAG: ${rag.chunks} chunks indexed for keyword search (tsvector, document frequencies) and ${rag.vectors} vectors copied from SQLite's vector tables.`)
            console.log(
              vectorSearch.path === 'pgvector'
                ? `Vectors: in pgvector's column (${vectorSearch.reason}).`
                : `Vectors: kept for the in-memory path (${vectorSearch.reason}).`,
            )
            if (keyMoved) console.log("The data dir's JWT key (jwt-secret) is now the database's (server_secrets): tokens it signed stay valid on servers without UAGENT_JWT_SECRET.")
            console.log(`Start the server with UAGENT_DATABASE_URL set and the same data dir (${dataDir}).`)
          })
        } finally {
          for (const source of sources) source.db.close()
          await postgres?.close()
        }
      }),
    'uagent admin migrate-to-postgres --data-dir /var/lib/uagent --database-url postgres://uagent:secret@db:5432/uagent',
  )
}
