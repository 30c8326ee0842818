import { statfsSync } from 'node:fs'
import { AppError } from './errors'

export const STORAGE_FULL_MESSAGE = "The server's storage is full: nothing was written. Free some space on the server (or ask its operator to), then try again."

/**
 * Whether an error means the storage is full: SQLite's SQLITE_FULL (a full disk, or the
 * database's page limit), a disk-full I/O error, or the file system's ENOSPC / EDQUOT.
 */
export function storageFull(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { code, errno, message } = error as { code?: unknown; errno?: unknown; message?: unknown }
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return true
  // SQLITE_FULL is 13; SQLITE_IOERR (10) with "disk" / "full" / "space" in its text is the same accident seen on write.
  if (typeof code === 'string' && code.startsWith('SQLITE_IOERR') && typeof message === 'string' && /full|space|quota/i.test(message)) return true
  if (errno === 13 && typeof code === 'string' && code.startsWith('SQLITE')) return true
  return typeof message === 'string' && /database or disk is full|no space left on device|disk quota exceeded/i.test(message)
}

/** The bytes free for this process on the file system that holds `path`; null when unknown. */
export function freeBytes(path: string): number | null {
  try {
    const stats = statfsSync(path)
    return Number(stats.bavail) * Number(stats.bsize)
  } catch {
    return null
  }
}

/** The free-space floor: UAGENT_MIN_FREE_MB (default 64). */
export function minFreeBytes(env: Record<string, string | undefined> = process.env): number {
  const raw = env.UAGENT_MIN_FREE_MB?.trim()
  if (!raw || !/^\d+$/.test(raw)) return 64 * 1024 * 1024
  return Number(raw) * 1024 * 1024
}

/**
 * Refuses a large write early (507 INSUFFICIENT_STORAGE) when writing `bytes` more into
 * `dataDir` would leave less than the floor free, before the database itself runs out of room.
 * For ingest and uploads now; plugin installs and audio can call it the same way.
 * `floor` defaults to UAGENT_MIN_FREE_MB; an unknown figure (no statfs) lets the write through.
 */
export function assertFreeSpace(dataDir: string, bytes: number, floor = minFreeBytes()): void {
  const free = freeBytes(dataDir)
  if (free === null) return
  if (free - bytes < floor) {
    throw new AppError('INSUFFICIENT_STORAGE', `${STORAGE_FULL_MESSAGE} (${formatBytes(free)} free, the server keeps at least ${formatBytes(floor)})`)
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  const units = ['KB', 'MB', 'GB', 'TB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

/**
 * The free-space floor of one data dir, as a service: `assertRoom(bytes)` before a large write.
 * Built once in createServices (services.storage); areas that write large things (ingest,
 * uploads, plugin installs, audio) call it with the bytes they are about to add.
 */
export class StorageGuard {
  constructor(
    /** null: nothing on disk to guard (an in-memory server). */
    readonly dataDir: string | null,
    readonly floorBytes: number,
  ) {}

  assertRoom(bytes: number): void {
    if (this.dataDir !== null) assertFreeSpace(this.dataDir, bytes, this.floorBytes)
  }
}
