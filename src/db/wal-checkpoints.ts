import type { Database } from 'bun:sqlite'

/** How often the checkpoint thread copies what the WAL holds into the database file (ms). */
const INTERVAL_MS = 100
/**
 * The server's own connection still checkpoints once the WAL holds this many pages (64 MB of 4 KB
 * pages): a backstop, should the thread fall behind or fail. SQLite's default is 1,000.
 */
const BACKSTOP_PAGES = 16_384

/**
 * WAL checkpoints off the request thread. SQLite's automatic checkpoint runs inside the COMMIT of
 * whichever write finds the WAL past `wal_autocheckpoint` pages (1,000 by default): that commit
 * copies the WAL into the database file and waits for two fsyncs, 20–60 ms a commit of a bulk
 * ingest, a third of its time (see docs/benchmarks.md, "Ingest at library scale"). Here a thread
 * runs a PASSIVE checkpoint (it never blocks a writer or a reader) through a short-lived connection
 * of its own whenever the WAL file changed, looked at every INTERVAL_MS, and the server's connection keeps
 * its automatic one only as a backstop (BACKSTOP_PAGES). Durability is SQLite's either way: a
 * commit is in the WAL, whoever copies it on.
 */
export class WalCheckpoints {
  private readonly worker: Worker
  private stopped: Promise<void> | null = null

  constructor(db: Database) {
    db.run(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`)
    this.worker = new Worker(new URL('./wal-checkpoints.worker.ts', import.meta.url).href)
    this.worker.postMessage({ kind: 'start', file: db.filename, intervalMs: INTERVAL_MS })
    // The process ends without waiting for it; close() stops it before the database closes.
    this.worker.unref()
  }

  /** Stops the thread (resolves within a second whatever happens). */
  close(): Promise<void> {
    this.stopped ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.worker.terminate()
        resolve()
      }
      const timer = setTimeout(done, 1000)
      this.worker.addEventListener('message', (event: MessageEvent<{ kind: string }>) => event.data.kind === 'stopped' && done())
      this.worker.postMessage({ kind: 'stop' })
    })
    return this.stopped
  }
}

/** Checkpoints off the request thread for a database file; null for an in-memory one (no WAL). */
export function walCheckpoints(db: Database): WalCheckpoints | null {
  return db.filename && db.filename !== ':memory:' ? new WalCheckpoints(db) : null
}
