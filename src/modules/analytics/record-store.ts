import type { Database } from 'bun:sqlite'
import { HOUR, type RequestRecord } from './record'

/** Records per INSERT statement: one statement per 64 rows costs less than one per row. */
const ROWS_PER_INSERT = 64

type Binding = string | number | null

/** The SQL side of recording: inserts records and adds them to the hourly rollup. */
export class RecordStore {
  private readonly insertRecord
  private readonly insertRecords
  private readonly upsertHour

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
    const hours = new Map<string, { hour: number; r: RequestRecord; requests: number; failures: number; duration: number; prompt: number; completion: number }>()
    const values: Binding[] = []
    this.db.transaction(() => {
      let i = 0
      for (; i + ROWS_PER_INSERT <= records.length; i += ROWS_PER_INSERT) {
        values.length = 0
        for (let j = i; j < i + ROWS_PER_INSERT; j++) {
          const r = records[j]!
          values.push(r.ts, r.method, r.route, r.status, r.durationMs, r.userId, r.promptTokens, r.completionTokens, r.model)
        }
        this.insertRecords.run(...values)
      }
      for (; i < records.length; i++) {
        const r = records[i]!
        this.insertRecord.run(r.ts, r.method, r.route, r.status, r.durationMs, r.userId, r.promptTokens, r.completionTokens, r.model)
      }
      for (const r of records) {
        const hour = Math.floor(r.ts / HOUR)
        const key = `${hour}\u0000${r.method}\u0000${r.route}\u0000${r.userId ?? ''}\u0000${r.model ?? ''}`
        let sum = hours.get(key)
        if (!sum) hours.set(key, (sum = { hour, r, requests: 0, failures: 0, duration: 0, prompt: 0, completion: 0 }))
        sum.requests++
        if (r.status >= 400) sum.failures++
        sum.duration += r.durationMs
        sum.prompt += r.promptTokens
        sum.completion += r.completionTokens
      }
      for (const s of hours.values()) {
        this.upsertHour.run(s.hour, s.r.method, s.r.route, s.r.userId ?? '', s.r.model ?? '', s.requests, s.failures, s.duration, s.prompt, s.completion)
      }
    })()
  }
}
