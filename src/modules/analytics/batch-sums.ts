import { COMPLETION, DURATION, FIELDS, METHOD, MODEL, PROMPT, type RecordBatch, ROUTE, STATUS, type StringList } from './record-batch'

/** Upper bounds (seconds) of the request duration histogram's buckets. */
export const DURATION_BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** A batch's requests of one method, route pattern and status, as Prometheus counts them. */
export interface SeriesSum {
  method: string
  route: string
  status: number
  /** Requests per duration bucket: one slot per bound of DURATION_BOUNDS, and a last one above them all. */
  buckets: number[]
  /** Seconds, all requests together. */
  seconds: number
  count: number
}

/** A batch's model tokens of one model. */
export interface TokenSum {
  model: string
  prompt: number
  completion: number
}

/** What a batch adds to the Prometheus metrics: a few sums, however many records it holds. */
export interface BatchSums {
  series: SeriesSum[]
  tokens: TokenSum[]
}

/** The bucket (index into DURATION_BOUNDS) of a duration in seconds; DURATION_BOUNDS.length above them all. */
function bucketOf(seconds: number): number {
  let i = 0
  while (i < DURATION_BOUNDS.length && seconds > DURATION_BOUNDS[i]!) i++
  return i
}

/**
 * Adds a batch up per Prometheus series (`names` are its strings by id). The writer thread does
 * this for each batch it writes, so that the thread answering requests only adds a few sums.
 */
export function sumBatch(batch: Pick<RecordBatch, 'count' | 'rows'>, names: StringList): BatchSums {
  const rows = batch.rows
  const groups = new Map<number, { method: number; route: number; status: number; buckets: number[]; seconds: number; count: number }>()
  const tokens = new Map<number, { prompt: number; completion: number }>()
  // Every id of the batch is below names.length and every status below 1000: a key of numbers
  // that cannot collide (exact while names stay below a few million).
  const stride = names.length
  for (let i = 0, at = 0; i < batch.count; i++, at += FIELDS) {
    const method = rows[at + METHOD]!
    const route = rows[at + ROUTE]!
    const status = rows[at + STATUS]!
    const key = (route * stride + method) * 1000 + status
    let group = groups.get(key)
    if (!group) groups.set(key, (group = { method, route, status, buckets: new Array<number>(DURATION_BOUNDS.length + 1).fill(0), seconds: 0, count: 0 }))
    const seconds = rows[at + DURATION]! / 1000
    group.buckets[bucketOf(seconds)]!++
    group.seconds += seconds
    group.count++
    const model = rows[at + MODEL]!
    if (model) {
      let used = tokens.get(model)
      if (!used) tokens.set(model, (used = { prompt: 0, completion: 0 }))
      used.prompt += rows[at + PROMPT]!
      used.completion += rows[at + COMPLETION]!
    }
  }
  return {
    series: [...groups.values()].map((group) => ({ ...group, method: names[group.method]!, route: names[group.route]! })),
    tokens: [...tokens].map(([id, used]) => ({ model: names[id]!, ...used })),
  }
}
