// The checkpoint thread of WalCheckpoints (see wal-checkpoints.ts): every few milliseconds, when
// the WAL file changed since the last look, a PASSIVE checkpoint through a connection opened for
// it and closed at once. Never held open between checkpoints, so the server's connection stays the
// last one when it closes: SQLite then copies what is left and removes the WAL, as it did before.
import { Database } from 'bun:sqlite'
import { statSync } from 'node:fs'

declare const self: Worker

let timer: ReturnType<typeof setInterval> | null = null

/** The WAL file's modification time (0 when there is none). */
function walChanged(file: string): number {
  try {
    return statSync(`${file}-wal`).mtimeMs
  } catch {
    return 0
  }
}

self.onmessage = (event: MessageEvent<{ kind: 'start'; file: string; intervalMs: number } | { kind: 'stop' }>) => {
  const message = event.data
  if (message.kind === 'stop') {
    if (timer) clearInterval(timer)
    timer = null
    self.postMessage({ kind: 'stopped' })
    return
  }
  const { file } = message
  let seen = walChanged(file)
  timer = setInterval(() => {
    const changed = walChanged(file)
    if (!changed || changed === seen) return
    seen = changed
    try {
      const db = new Database(file)
      try {
        db.run('PRAGMA wal_checkpoint(PASSIVE)')
      } finally {
        db.close()
      }
    } catch {
      // Busy or failed this time: the next change tries again, and the server's own backstop remains.
    }
  }, message.intervalMs)
}
