export const MINUTE = 60_000
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR

/** One recorded request (or WebSocket message). */
export interface RequestRecord {
  /** Epoch milliseconds at which the request arrived. */
  ts: number
  /** HTTP method, or `WS` for a WebSocket message. */
  method: string
  /** Route pattern (`/agents/task/:taskId`), `(unmatched)`, or the WebSocket message type. */
  route: string
  status: number
  durationMs: number
  userId: string | null
  promptTokens: number
  completionTokens: number
  model: string | null
}

