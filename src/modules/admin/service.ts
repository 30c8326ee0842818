import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../../../package.json'
import { AppError } from '../../core/errors'
import { findPgTool, libpqEnvOf, runPgTool } from '../../db/pg-tools'
import type { Postgres } from '../../db/postgres'
import type { Manifest, SnapshotRequest } from './snapshot'

export interface BackupInfo {
  name: string
  size: number
  createdAt: string
}

export interface BackupOptions {
  dataDir: string
  dbPath: string
  /** The request records' database file (analytics.db), backed up beside it. */
  analyticsPath?: string
  /** Seconds between scheduled backups; 0: none. */
  intervalSeconds: number
  /** Scheduled backups kept in <dataDir>/backups. */
  keep: number
  log: (line: string) => void
  /**
   * The PostgreSQL database the server keeps its stores in (UAGENT_DATABASE_URL): each backup
   * holds a dump of it (pg_dump --format=custom, as postgres.dump) beside the data dir's files.
   */
  postgres?: Postgres | null
  /** The pg_dump program (default: pg_dump on PATH). */
  pgDump?: string
  /** Told of each scheduled backup written (the audit log records it). */
  onScheduled?: (backup: { name: string; size: number; files: number }) => void
}

const NAME = /^uagent-backup-[0-9TZ-]+\.tar\.gz$/

const stamp = (date = new Date()) => date.toISOString().replace(/[:.]/g, '-')

/** Online backups: one archive at a time, made by a worker thread; scheduled ones rotated in backups/. */
export class BackupService {
  readonly dir: string
  private running: Promise<unknown> | null = null
  private timer: ReturnType<typeof setInterval> | null = null

  constructor(private readonly options: BackupOptions) {
    this.dir = join(options.dataDir, 'backups')
  }

  /** Makes an archive at `<dataDir>/backups/<name>` and returns its path and manifest. */
  async create(name = `uagent-backup-${stamp()}.tar.gz`): Promise<{ path: string; name: string; size: number; manifest: Manifest }> {
    if (this.running) throw new AppError('CONFLICT', 'A backup is already being made; try again when it is done')
    const pgDump = this.options.postgres ? findPgTool(this.options.pgDump ?? 'pg_dump') : null
    if (this.options.postgres && !pgDump) {
      throw new AppError(
        'TOOL_UNAVAILABLE',
        "This server keeps its data in PostgreSQL and pg_dump is not installed on its host, so no backup was made: install PostgreSQL's client programs (Debian: apt-get install postgresql-client) and try again",
      )
    }
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const path = join(this.dir, name)
    const dump = pgDump ? join(this.dir, `.postgres-${crypto.randomUUID()}.dump`) : undefined
    const work = (async () => {
      try {
        if (pgDump && dump) await this.dumpPostgres(pgDump, dump)
        return await this.snapshot({ dataDir: this.options.dataDir, dbPath: this.options.dbPath, analyticsPath: this.options.analyticsPath, postgresDump: dump, outFile: path, serverVersion: pkg.version })
      } finally {
        if (dump) rmSync(dump, { force: true })
      }
    })()
    this.running = work
    try {
      const { size, manifest } = await work
      return { path, name, size, manifest }
    } finally {
      this.running = null
    }
  }

  /** pg_dump of the server's PostgreSQL database into `file` (a consistent snapshot: the server goes on meanwhile). */
  private async dumpPostgres(pgDump: string, file: string): Promise<void> {
    try {
      await runPgTool(pgDump, ['--format=custom', '--no-password', `--file=${file}`], libpqEnvOf(this.options.postgres!))
    } catch (error) {
      this.options.log(`Backup: pg_dump failed: ${(error as Error).message}`)
      throw new AppError('DATABASE_UNAVAILABLE', 'pg_dump could not dump the PostgreSQL database (see the server log); no backup was made')
    }
  }

  /** The archive itself, made by a worker thread. */
  private snapshot(request: SnapshotRequest): Promise<{ size: number; manifest: Manifest }> {
    return new Promise<{ size: number; manifest: Manifest }>((resolve, reject) => {
      const worker = new Worker(new URL('./snapshot-worker.ts', import.meta.url).href)
      worker.onmessage = (event: MessageEvent) => {
        worker.terminate()
        const data = event.data as { ok: boolean; size: number; manifest: Manifest; message: string; code?: string }
        if (data.ok) resolve({ size: data.size, manifest: data.manifest })
        else reject(Object.assign(new Error(data.message), { code: data.code }))
      }
      worker.onerror = (event) => {
        worker.terminate()
        reject(new Error(event.message))
      }
      worker.postMessage(request)
    })
  }

  /** The archives in backups/, newest first. */
  list(): BackupInfo[] {
    let names: string[]
    try {
      names = readdirSync(this.dir)
    } catch {
      return []
    }
    return names
      .filter((name) => NAME.test(name))
      .map((name) => {
        const stats = statSync(join(this.dir, name))
        return { name, size: stats.size, createdAt: stats.mtime.toISOString() }
      })
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.name.localeCompare(a.name))
  }

  /** Keeps the newest `keep` archives of backups/. */
  prune(keep = this.options.keep): void {
    for (const old of this.list().slice(keep)) rmSync(join(this.dir, old.name), { force: true })
  }

  /** Starts the schedule (UAGENT_BACKUP_INTERVAL), if one is configured. */
  start(): void {
    if (!this.options.intervalSeconds || this.timer) return
    this.timer = setInterval(() => {
      if (this.running) return
      this.create()
        .then((backup) => {
          this.prune()
          this.options.log(`Scheduled backup written: ${backup.path} (${backup.size} bytes)`)
          this.options.onScheduled?.({ name: backup.name, size: backup.size, files: backup.manifest.files.length })
        })
        .catch((error) => this.options.log(`Scheduled backup failed: ${(error as Error)?.message ?? String(error)}`))
    }, this.options.intervalSeconds * 1000)
    this.timer.unref?.()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}
