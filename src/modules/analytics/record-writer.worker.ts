// The writer thread of WriterThread: writes record batches through its own connection to the
// database file (WAL lets the server's connection read and write beside it), and answers each
// batch with its id, and the reason when it could not be written (the batch is then dropped),
// with what the batch adds to the Prometheus metrics.
import { Database } from 'bun:sqlite'
import { workerData } from 'node:worker_threads'
import { type BatchSums, sumBatch } from './batch-sums'
import { RecordStore } from './record-store'
import { receiveStrings, type StringList } from './record-batch'
import type { BatchMessage } from './writer-thread'

declare const self: Worker

const db = new Database((workerData as { path: string }).path, { strict: true })
db.run('PRAGMA busy_timeout = 5000')
db.run('PRAGMA synchronous = NORMAL')
const store = new RecordStore(db)
const names: StringList = [null]
/** The shared buffers the sender's batches name by slot (see WriterThread). */
const shared = new Map<number, Float64Array>()

self.addEventListener('message', (event: MessageEvent<BatchMessage & { id: number }>) => {
  const { id, batch, forget } = event.data
  for (const slot of forget ?? []) shared.delete(slot)
  const slot = batch.slot
  if (batch.rows) shared.set(slot, batch.rows)
  const rows = shared.get(slot)
  // The batch's new strings are taken in even when it cannot be written: later batches use them.
  receiveStrings(names, batch)
  let sums: BatchSums | undefined
  let failure: string | undefined
  if (!rows) failure = `batch buffer ${slot} unknown to the writer thread`
  else {
    const records = { ...batch, rows }
    // Added up here, not on the thread that answers requests (and counted even if not stored).
    sums = sumBatch(records, names)
    try {
      store.writeBatch(records, names)
    } catch (error) {
      failure = (error as { code?: string }).code ?? (error as Error)?.message ?? String(error)
    }
  }
  // (The buffer never left: the recorder takes it back for a later batch when this answer arrives.)
  self.postMessage({ id, failure, sums })
})
