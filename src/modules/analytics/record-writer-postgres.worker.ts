// The writer thread of WriterThread for PostgreSQL (UAGENT_DATABASE_URL): writes record batches
// through a pool of its own (so that making the INSERT's arrays, and the client's encoding of
// them, stay off the thread that answers requests), in the order they arrive. A batch PostgreSQL
// does not take is kept here (a copy: its shared buffer goes back to the recorder) and written
// before the next one, or when the recorder asks (`retry`), up to `maxPending` records; beyond
// that the oldest are dropped, and the answer says how many.
import { SQL } from 'bun'
import { workerData } from 'node:worker_threads'
import { type BatchSums, sumBatch } from './batch-sums'
import { FIELDS, receiveStrings, type StringList } from './record-batch'
import { type PostgresBatch, PostgresRecordStore } from './record-store.postgres'
import type { BatchMessage } from './writer-thread'

declare const self: Worker

const { postgres, maxPending } = workerData as { postgres: ConstructorParameters<typeof SQL>[0] & object; maxPending: number }
// One connection (batches are written one after the other; a busy server flushes every second),
// let go after 2 s without one: a quiet server holds none of the database's connection slots.
const store = new PostgresRecordStore(new SQL({ ...postgres, max: 1, idleTimeout: 2, connectionTimeout: 10 }))
const names: StringList = [null]
/** The shared buffers the sender's batches name by slot (see WriterThread). */
const shared = new Map<number, Float64Array>()
/** Batches PostgreSQL did not take yet, oldest first, and their records. */
const kept: PostgresBatch[] = []
let keptCount = 0
/** Batches are written one after the other, in the order they came. */
let queue: Promise<void> = Promise.resolve()

const reasonOf = (error: unknown) => ((error as Error)?.message ?? String(error)).replace(/\s+/g, ' ').trim()

/** Writes the kept batches, oldest first; the reason of the first one refused (the rest wait), or undefined. */
async function writeKept(): Promise<string | undefined> {
  while (kept.length) {
    try {
      await store.writeBatch(kept[0]!)
    } catch (error) {
      return reasonOf(error)
    }
    keptCount -= kept.shift()!.count
  }
  return undefined
}

/** Keeps a batch refused; returns the records dropped to stay within maxPending. */
function keep(batch: PostgresBatch): number {
  kept.push(batch)
  keptCount += batch.count
  let dropped = 0
  while (keptCount > maxPending && kept.length > 1) {
    const oldest = kept.shift()!
    keptCount -= oldest.count
    dropped += oldest.count
  }
  return dropped
}

self.addEventListener('message', (event: MessageEvent<BatchMessage & { id: number; retry?: boolean }>) => {
  const { id, batch, forget, retry } = event.data
  for (const slot of forget ?? []) shared.delete(slot)
  if (retry) {
    queue = queue.then(async () => {
      const reason = await writeKept()
      self.postMessage({ id, kept: keptCount, reason })
    })
    return
  }
  const slot = batch.slot
  if (batch.rows) shared.set(slot, batch.rows)
  const rows = shared.get(slot)
  // Taken in now, in order, even when the batch cannot be written: later batches use them.
  receiveStrings(names, batch)
  if (!rows) {
    self.postMessage({ id, failure: `batch buffer ${slot} unknown to the writer thread` })
    return
  }
  const sums: BatchSums = sumBatch({ count: batch.count, rows }, names)
  // The batch's own copy of the strings: the table may start again before it is written.
  const own: PostgresBatch = { count: batch.count, rows, names: names.slice() }
  queue = queue.then(async () => {
    let reason = await writeKept()
    if (reason === undefined) {
      try {
        await store.writeBatch(own)
      } catch (error) {
        reason = reasonOf(error)
      }
    }
    let dropped = 0
    // Kept as a copy of its numbers: the shared buffer goes back to the recorder with this answer.
    if (reason !== undefined) dropped = keep({ ...own, rows: rows.slice(0, own.count * FIELDS) })
    self.postMessage({ id, sums, kept: keptCount, reason, ...(dropped ? { failure: reason, dropped } : {}) })
  })
})
