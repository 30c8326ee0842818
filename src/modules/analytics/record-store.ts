import type { Database } from 'bun:sqlite'
import { HOUR, MINUTE, type RequestRecord } from './record'
import { batchOf, COMPLETION, DURATION, FIELDS, METHOD, MODEL, PROMPT, type RecordBatch, ROUTE, STATUS, StringIds, type StringList, TS, USER } from './record-batch'

/** Records per INSERT statement: one statement per 64 rows costs less than one per row. */
const ROWS_PER_INSERT = 64
/**
 * Values per record when none of a statement's records used a model (most requests): their
 * prompt_tokens, completion_tokens and model are the columns' defaults (0, 0, NULL), not bound
 * (binding three values fewer a record cost SQLite 0.03-0.06 µs less, of about 0.35).
 */
const PLAIN_FIELDS = 6

type Binding = number | null

export interface HourSum {
  hour: number
  method: number
  route: number
  user: number
  model: number
  requests: number
  failures: number
  duration: number
  prompt: number
  completion: number
}

/** The earliest and latest time of a batch's records, and whether they are in time order. */
interface TimeRange {
  low: number
  high: number
  sorted: boolean
}

function timeRange(rows: Float64Array, count: number): TimeRange {
  let sorted = true
  let low = Infinity
  let high = -Infinity
  for (let i = 0, at = TS; i < count; i++, at += FIELDS) {
    const ts = rows[at]!
    if (ts < high) sorted = false
    if (ts < low) low = ts
    if (ts > high) high = ts
  }
  return { low, high, sorted }
}

/**
 * The records' indexes in time order (stable), or null when they already are (a batch is in the
 * order its requests ended, nearly that of their arrival).
 */
function timeOrder(rows: Float64Array, count: number, { low, high, sorted }: TimeRange): Uint32Array | null {
  if (sorted) return null
  const order = new Uint32Array(count)
  const INDEX = 2 ** 21
  if (count < INDEX && Number.isInteger(low) && Number.isInteger(high) && (high - low + 1) * INDEX < Number.MAX_SAFE_INTEGER) {
    // Time and index in one number: a numeric sort (native, no comparator called), stable.
    const keys = new Float64Array(count)
    for (let i = 0, at = TS; i < count; i++, at += FIELDS) keys[i] = (Math.floor(rows[at]!) - low) * INDEX + i
    keys.sort()
    for (let i = 0; i < count; i++) order[i] = keys[i]! % INDEX
  } else {
    for (let i = 0; i < count; i++) order[i] = i
    order.sort((a, b) => rows[a * FIELDS + TS]! - rows[b * FIELDS + TS]! || a - b)
  }
  return order
}

/**
 * A batch's records added up per hour, endpoint (method and route) and caller (user and model):
 * the rows it adds to analytics_hourly. Every string id of the batch is below `stride`. The key
 * of a sum is one number made of the five (no string built per record) when that number is exact
 * (fewer than about 9,000 strings in the batches' table): one Map lookup a record, where a Map per
 * level took 3 and cost five times as much (82 against 17 ns a record); else a Map per level.
 */
export function hourSums(rows: Float64Array, count: number, stride: number, range = timeRange(rows, count)): Iterable<HourSum> {
  const low = Math.floor(range.low / HOUR)
  const high = Math.floor(range.high / HOUR)
  const exact = count > 0 && (high - low + 1) * stride ** 4 <= Number.MAX_SAFE_INTEGER
  const byKey = new Map<number, HourSum>()
  const byHour = new Map<number, Map<number, Map<number, HourSum>>>()
  for (let i = 0, at = 0; i < count; i++, at += FIELDS) {
    const hour = Math.floor(rows[at + TS]! / HOUR)
    const method = rows[at + METHOD]!
    const route = rows[at + ROUTE]!
    const user = rows[at + USER]!
    const model = rows[at + MODEL]!
    // The sums of this record's key: in byKey under one number, or in byHour level by level.
    let sums: Map<number, HourSum> = byKey
    let key: number
    if (exact) key = ((((hour - low) * stride + route) * stride + method) * stride + user) * stride + model
    else {
      let byEndpoint = byHour.get(hour)
      if (!byEndpoint) byHour.set(hour, (byEndpoint = new Map()))
      const endpoint = route * stride + method
      let byCaller = byEndpoint.get(endpoint)
      if (!byCaller) byEndpoint.set(endpoint, (byCaller = new Map()))
      sums = byCaller
      key = user * stride + model
    }
    let sum = sums.get(key)
    if (!sum) sums.set(key, (sum = { hour, method, route, user, model, requests: 0, failures: 0, duration: 0, prompt: 0, completion: 0 }))
    sum.requests++
    if (rows[at + STATUS]! >= 400) sum.failures++
    sum.duration += rows[at + DURATION]!
    sum.prompt += rows[at + PROMPT]!
    sum.completion += rows[at + COMPLETION]!
  }
  if (exact) return byKey.values()
  return [...byHour.values()].flatMap((byEndpoint) => [...byEndpoint.values()].flatMap((byCaller) => [...byCaller.values()]))
}

/**
 * The SQL side of recording: inserts records and adds them to the hourly rollup and to the span
 * of ids of their minute (analytics_spans, which stands in for a time index: see migration 012).
 * A batch is inserted in time order; its records get the ids after the newest one (SQLite gives a
 * new row the largest id plus one), so their spans are known without reading them back. A record
 * is stored as numbers: its strings are ids in analytics_strings (migration 013), which this
 * store remembers by the batches' own ids of them (see record-batch.ts).
 */
export class RecordStore {
  private readonly insertRecord
  private readonly insertRecords
  private readonly insertPlainRecords
  private readonly upsertHour
  private readonly newestId
  private readonly upsertSpan
  private readonly spansOf
  private readonly selectString
  private readonly insertString
  private readonly values: Binding[] = new Array(ROWS_PER_INSERT * FIELDS)
  private readonly plainValues: Binding[] = new Array(ROWS_PER_INSERT * PLAIN_FIELDS)
  /**
   * The database id of a batch's string id, valid while the batches' string of that id is the one
   * in `known` (the batches' table of strings starts again now and then: see StringIds). Id 0 is null.
   */
  private readonly ids: Binding[] = [null]
  private readonly known: (string | null)[] = [null]

  constructor(private readonly db: Database) {
    const insert = 'INSERT INTO analytics_records (ts, method, route, status, duration_ms, user_id, prompt_tokens, completion_tokens, model) VALUES '
    const row = '(?, ?, ?, ?, ?, ?, ?, ?, ?)'
    this.insertRecord = db.prepare(insert + row)
    this.insertRecords = db.prepare(insert + Array(ROWS_PER_INSERT).fill(row).join(', '))
    this.insertPlainRecords = db.prepare(
      'INSERT INTO analytics_records (ts, method, route, status, duration_ms, user_id) VALUES ' + Array(ROWS_PER_INSERT).fill('(?, ?, ?, ?, ?, ?)').join(', '),
    )
    this.newestId = db.query<{ id: number | null }, []>('SELECT max(id) AS id FROM analytics_records')
    this.upsertSpan = db.prepare(
      `INSERT INTO analytics_spans (minute, first_id, last_id) VALUES (?, ?, ?)
       ON CONFLICT (minute) DO UPDATE SET first_id = min(first_id, excluded.first_id), last_id = max(last_id, excluded.last_id)`,
    )
    this.spansOf = db.query<{ minute: number; first: number; last: number }, [number]>(
      `SELECT CAST(ts AS INTEGER) / ${MINUTE} AS minute, min(id) AS first, max(id) AS last FROM analytics_records WHERE id > ? GROUP BY 1`,
    )
    this.selectString = db.query<{ id: number }, [string]>('SELECT id FROM analytics_strings WHERE value = ?')
    this.insertString = db.prepare<unknown, [string]>('INSERT INTO analytics_strings (value) VALUES (?)')
    this.upsertHour = db.prepare(
      `INSERT INTO analytics_hourly (hour, method, route, user_id, model, requests, failures, duration_sum, prompt_tokens, completion_tokens)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (hour, method, route, user_id, model) DO UPDATE SET
         requests = requests + excluded.requests,
         failures = failures + excluded.failures,
         duration_sum = duration_sum + excluded.duration_sum,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens`,
    )
  }

  /** Writes records and their rollup in one transaction; throws what SQLite throws (nothing is then written). */
  write(records: RequestRecord[]): void {
    const strings = new StringIds()
    this.writeBatch(batchOf(strings, records), strings.names)
  }

  /**
   * Writes a batch (see record-batch.ts; `names` are its strings by id) and its rollup in one
   * transaction; throws what SQLite throws (nothing is then written).
   */
  writeBatch(batch: Pick<RecordBatch, 'count' | 'rows'>, names: StringList): void {
    const { count, rows } = batch
    const range = timeRange(rows, count)
    const order = timeOrder(rows, count, range)
    // (Added up before the write lock is taken.)
    const sums = hourSums(rows, count, names.length, range)
    const write = this.db.transaction(() => {
      const before = this.newestId.get()?.id ?? 0
      // The database ids of the batch's string ids, looked up once per batch (a batch uses few).
      const dbIds: Binding[] = []
      let i = 0
      for (; i + ROWS_PER_INSERT <= count; i += ROWS_PER_INSERT) {
        let usage = false
        for (let j = 0; j < ROWS_PER_INSERT && !usage; j++) {
          const at = (order ? order[i + j]! : i + j) * FIELDS
          usage = rows[at + MODEL] !== 0 || rows[at + PROMPT] !== 0 || rows[at + COMPLETION] !== 0
        }
        const width = usage ? FIELDS : PLAIN_FIELDS
        const bound = usage ? this.values : this.plainValues
        for (let j = 0; j < ROWS_PER_INSERT; j++) this.bindRecord(bound, j * width, rows, (order ? order[i + j]! : i + j) * FIELDS, names, dbIds, usage)
        // (The array itself, not spread: Bun binds it positionally, and faster.)
        ;(usage ? this.insertRecords : this.insertPlainRecords).run(bound as never)
      }
      const one: Binding[] = new Array(FIELDS)
      for (; i < count; i++) {
        this.bindRecord(one, 0, rows, (order ? order[i]! : i) * FIELDS, names, dbIds, true)
        this.insertRecord.run(one as never)
      }
      this.addSpans(rows, count, order, before)
      for (const s of sums) {
        this.upsertHour.run(s.hour, names[s.method]!, names[s.route]!, names[s.user] ?? '', names[s.model] ?? '', s.requests, s.failures, s.duration, s.prompt, s.completion)
      }
    })
    try {
      // IMMEDIATE: the write lock is taken (waiting out busy_timeout) before the first read, so that
      // a connection writing meanwhile cannot make this one's reads stale for its writes.
      write.immediate()
    } catch (error) {
      // Strings this batch added to analytics_strings were rolled back with it: their ids are
      // forgotten (all of them, the simplest sure way), to be looked up again.
      this.ids.length = 1
      this.known.length = 1
      throw error
    }
  }

  /**
   * Puts the record at `at` of `rows` into `values` from `v` on, in the order of the INSERT's
   * columns: all of them, or (`usage` false) all but the last three.
   */
  private bindRecord(values: Binding[], v: number, rows: Float64Array, at: number, names: StringList, dbIds: Binding[], usage: boolean): void {
    const method = rows[at + METHOD]! | 0
    const route = rows[at + ROUTE]! | 0
    const user = rows[at + USER]! | 0
    values[v] = rows[at + TS]!
    values[v + 1] = dbIds[method] ?? (dbIds[method] = this.stringId(method, names))
    values[v + 2] = dbIds[route] ?? (dbIds[route] = this.stringId(route, names))
    values[v + 3] = rows[at + STATUS]!
    values[v + 4] = rows[at + DURATION]!
    values[v + 5] = user ? (dbIds[user] ?? (dbIds[user] = this.stringId(user, names))) : null
    if (!usage) return
    const model = rows[at + MODEL]! | 0
    values[v + 6] = rows[at + PROMPT]!
    values[v + 7] = rows[at + COMPLETION]!
    values[v + 8] = model ? (dbIds[model] ?? (dbIds[model] = this.stringId(model, names))) : null
  }

  /** The id in analytics_strings of the batch's string `id` (null for 0), added to it if new. */
  private stringId(id: number, names: StringList): Binding {
    const value = names[id]!
    if (this.known[id] === value) return this.ids[id]!
    const found = value === null ? null : (this.selectString.get(value)?.id ?? Number(this.insertString.run(value).lastInsertRowid))
    this.known[id] = value
    this.ids[id] = found
    return found
  }

  /**
   * Widens the id spans of the minutes of a batch just inserted in `order` after id `before`: the
   * i-th record has id before + 1 + i (read back from the table if, against expectation, not).
   */
  private addSpans(rows: Float64Array, count: number, order: Uint32Array | null, before: number): void {
    if (!count) return
    if ((this.newestId.get()?.id ?? 0) !== before + count) {
      for (const { minute, first, last } of this.spansOf.all(before)) this.upsertSpan.run(minute, first, last)
      return
    }
    let minute = NaN
    let first = 0
    for (let i = 0; i <= count; i++) {
      const current = i < count ? Math.floor(rows[(order ? order[i]! : i) * FIELDS + TS]! / MINUTE) : NaN
      if (current === minute) continue
      if (i) this.upsertSpan.run(minute, first, before + i)
      minute = current
      first = before + 1 + i
    }
  }
}
