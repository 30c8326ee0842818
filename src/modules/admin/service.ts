import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../../../package.json'
import { AppError } from '../../core/errors'
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
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const path = join(this.dir, name)
    const request: SnapshotRequest = { dataDir: this.options.dataDir, dbPath: this.options.dbPath, analyticsPath: this.options.analyticsPath, outFile: path, serverVersion: pkg.version }
    const work = new Promise<{ size: number; manifest: Manifest }>((resolve, reject) => {
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
    this.running = work
    try {
      const { size, manifest } = await work
      return { path, name, size, manifest }
    } finally {
      this.running = null
    }
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
