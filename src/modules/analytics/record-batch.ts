import type { RequestRecord } from './record'

/**
 * Records waiting to be written, as numbers: FIELDS slots per record in one Float64Array, the
 * strings (method, route, user, model) as ids into a table of strings that the recorder and the
 * writer thread both keep. The writer thread reads a batch in the recorder's buffer itself (a
 * SharedArrayBuffer: see WriterThread), and a request costs no object, closure or string of its own.
 */
export const FIELDS = 9
export const TS = 0
export const DURATION = 1
export const STATUS = 2
export const METHOD = 3
export const ROUTE = 4
export const USER = 5
export const MODEL = 6
export const PROMPT = 7
export const COMPLETION = 8

/** Strings the table holds before it starts again (the next batch then says `reset`). */
export const MAX_STRINGS = 100_000

export interface RecordBatch {
  count: number
  rows: Float64Array
  /** Strings first used by this batch, in the order of their ids (they continue the table). */
  strings: string[]
  /** The table started again (from id 1) before this batch's strings. */
  reset: boolean
}

/** Strings by id (0 is null), as the receiving side rebuilds them from the batches in order. */
export type StringList = (string | null)[]

/** The sending side of the string table: ids for strings, and what the next batch must carry. */
export class StringIds {
  private ids = new Map<string, number>()
  /** Strings by id, 0 being null. */
  readonly names: StringList = [null]
  private added: string[] = []
  private restarted = false

  id(value: string | null): number {
    if (value === null) return 0
    let id = this.ids.get(value)
    if (id === undefined) {
      id = this.names.length
      this.ids.set(value, id)
      this.names.push(value)
      this.added.push(value)
    }
    return id
  }

  /** The strings added since the last call, and whether the table started again meanwhile. */
  take(): { strings: string[]; reset: boolean } {
    const taken = { strings: this.added, reset: this.restarted }
    this.added = []
    this.restarted = false
    return taken
  }

  /** Starts the table again once it holds more than `limit` strings (called between batches). */
  restartOver(limit = MAX_STRINGS): void {
    if (this.names.length <= limit) return
    this.ids = new Map()
    this.names.length = 1
    this.added = []
    this.restarted = true
  }
}

/** Brings the receiving side's list of strings up to date with a batch (before reading it). */
export function receiveStrings(names: StringList, batch: Pick<RecordBatch, 'strings' | 'reset'>): void {
  if (batch.reset) names.length = 1
  for (const value of batch.strings) names.push(value)
}

/** Records as a batch, their strings given ids by `ids` (the inverse of recordsOf). */
export function batchOf(ids: StringIds, records: RequestRecord[]): RecordBatch {
  const rows = new Float64Array(records.length * FIELDS)
  for (let i = 0, at = 0; i < records.length; i++, at += FIELDS) {
    const r = records[i]!
    rows[at + TS] = r.ts
    rows[at + DURATION] = r.durationMs
    rows[at + STATUS] = r.status
    rows[at + METHOD] = ids.id(r.method)
    rows[at + ROUTE] = ids.id(r.route)
    rows[at + USER] = ids.id(r.userId)
    rows[at + MODEL] = ids.id(r.model)
    rows[at + PROMPT] = r.promptTokens
    rows[at + COMPLETION] = r.completionTokens
  }
  return { count: records.length, rows, ...ids.take() }
}

/** The records of a batch as objects. */
export function recordsOf(batch: Pick<RecordBatch, 'count' | 'rows'>, names: StringList): RequestRecord[] {
  const records: RequestRecord[] = new Array(batch.count)
  const rows = batch.rows
  for (let i = 0, at = 0; i < batch.count; i++, at += FIELDS) {
    records[i] = {
      ts: rows[at + TS]!,
      method: names[rows[at + METHOD]!]!,
      route: names[rows[at + ROUTE]!]!,
      status: rows[at + STATUS]!,
      durationMs: rows[at + DURATION]!,
      userId: names[rows[at + USER]!] ?? null,
      promptTokens: rows[at + PROMPT]!,
      completionTokens: rows[at + COMPLETION]!,
      model: names[rows[at + MODEL]!] ?? null,
    }
  }
  return records
}
