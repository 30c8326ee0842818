// The writer thread of WriterThread: writes record batches through its own connection to the
// database file (WAL lets the server's connection read and write beside it), and answers each
// batch with its id, and the reason when it could not be written (the batch is then dropped),
// handing the batch's buffer back with what the batch adds to the Prometheus metrics.
import { Database } from 'bun:sqlite'
import { workerData } from 'node:worker_threads'
import { sumBatch } from './batch-sums'
import { RecordStore } from './record-store'
import { type RecordBatch, receiveStrings, type StringList } from './record-batch'

declare const self: Worker

const db = new Database((workerData as { path: string }).path, { strict: true })
db.run('PRAGMA busy_timeout = 5000')
db.run('PRAGMA synchronous = NORMAL')
const store = new RecordStore(db)
const names: StringList = [null]

self.addEventListener('message', (event: MessageEvent<{ id: number; batch: RecordBatch }>) => {
  const { id, batch } = event.data
  // The batch's new strings are taken in even when it cannot be written: later batches use them.
  receiveStrings(names, batch)
  // Added up here, not on the thread that answers requests (and counted even if not stored).
  const sums = sumBatch(batch, names)
  let failure: string | undefined
  try {
    store.writeBatch(batch, names)
  } catch (error) {
    failure = (error as { code?: string }).code ?? (error as Error)?.message ?? String(error)
  }
  // The buffer goes back for the recorder's next batch (no new one to allocate and zero).
  self.postMessage({ id, failure, rows: batch.rows, sums }, [batch.rows.buffer])
})
