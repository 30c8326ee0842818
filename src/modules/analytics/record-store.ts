import type { Database } from 'bun:sqlite'
import { HOUR, type RequestRecord } from './record'
import { batchOf, COMPLETION, DURATION, FIELDS, METHOD, MODEL, PROMPT, type RecordBatch, ROUTE, STATUS, StringIds, type StringList, TS, USER } from './record-batch'

/** Records per INSERT statement: one statement per 64 rows costs less than one per row. */
const ROWS_PER_INSERT = 64

type Binding = string | number | null

interface HourSum {
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

/** The SQL side of recording: inserts records and adds them to the hourly rollup. */
export class RecordStore {
  private readonly insertRecord
  private readonly insertRecords
  private readonly upsertHour
  private readonly values: Binding[] = new Array(ROWS_PER_INSERT * FIELDS)

  constructor(private readonly db: Database) {
    const insert = 'INSERT INTO analytics_requests (ts, method, route, status, duration_ms, user_id, prompt_tokens, completion_tokens, model) VALUES '
    const row = '(?, ?, ?, ?, ?, ?, ?, ?, ?)'
    this.insertRecord = db.prepare(insert + row)
    this.insertRecords = db.prepare(insert + Array(ROWS_PER_INSERT).fill(row).join(', '))
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
    const values = this.values
    // Rollup rows by hour, then by method and route, then by user and model: keys of numbers
    // (every id is below names.length), no string built per record.
    const stride = names.length
    const hours = new Map<number, Map<number, Map<number, HourSum>>>()
    this.db.transaction(() => {
      let i = 0
      for (; i + ROWS_PER_INSERT <= count; i += ROWS_PER_INSERT) {
        for (let j = 0, at = i * FIELDS, v = 0; j < ROWS_PER_INSERT; j++, at += FIELDS) {
          values[v++] = rows[at + TS]!
          values[v++] = names[rows[at + METHOD]!]!
          values[v++] = names[rows[at + ROUTE]!]!
          values[v++] = rows[at + STATUS]!
          values[v++] = rows[at + DURATION]!
          values[v++] = names[rows[at + USER]!] ?? null
          values[v++] = rows[at + PROMPT]!
          values[v++] = rows[at + COMPLETION]!
          values[v++] = names[rows[at + MODEL]!] ?? null
        }
        this.insertRecords.run(...values)
      }
      for (let at = i * FIELDS; i < count; i++, at += FIELDS) {
        this.insertRecord.run(
          rows[at + TS]!,
          names[rows[at + METHOD]!]!,
          names[rows[at + ROUTE]!]!,
          rows[at + STATUS]!,
          rows[at + DURATION]!,
          names[rows[at + USER]!] ?? null,
          rows[at + PROMPT]!,
          rows[at + COMPLETION]!,
          names[rows[at + MODEL]!] ?? null,
        )
      }
      for (let k = 0, at = 0; k < count; k++, at += FIELDS) {
        const hour = Math.floor(rows[at + TS]! / HOUR)
        const method = rows[at + METHOD]!
        const route = rows[at + ROUTE]!
        const user = rows[at + USER]!
        const model = rows[at + MODEL]!
        let byEndpoint = hours.get(hour)
        if (!byEndpoint) hours.set(hour, (byEndpoint = new Map()))
        const endpoint = route * stride + method
        let byCaller = byEndpoint.get(endpoint)
        if (!byCaller) byEndpoint.set(endpoint, (byCaller = new Map()))
        const caller = user * stride + model
        let sum = byCaller.get(caller)
        if (!sum) byCaller.set(caller, (sum = { hour, method, route, user, model, requests: 0, failures: 0, duration: 0, prompt: 0, completion: 0 }))
        sum.requests++
        if (rows[at + STATUS]! >= 400) sum.failures++
        sum.duration += rows[at + DURATION]!
        sum.prompt += rows[at + PROMPT]!
        sum.completion += rows[at + COMPLETION]!
      }
      for (const byEndpoint of hours.values()) {
        for (const byCaller of byEndpoint.values()) {
          for (const s of byCaller.values()) {
            this.upsertHour.run(s.hour, names[s.method]!, names[s.route]!, names[s.user] ?? '', names[s.model] ?? '', s.requests, s.failures, s.duration, s.prompt, s.completion)
          }
        }
      }
    })()
  }
}
