// The backup's heavy work (VACUUM INTO, hashing, gzip) runs here, off the server's event loop,
// so that requests keep being answered while a backup of a large database is made.
import { writeSnapshot, type SnapshotRequest } from './snapshot'

declare const self: Worker

self.onmessage = async (event: MessageEvent<SnapshotRequest>) => {
  try {
    const result = await writeSnapshot(event.data)
    self.postMessage({ ok: true, ...result })
  } catch (error) {
    self.postMessage({ ok: false, message: (error as Error)?.message ?? String(error), code: (error as { code?: string })?.code })
  }
}
