import type { Database } from 'bun:sqlite'

export type Verbosity = 'low' | 'medium' | 'high'

export interface AutopilotPreferences {
  verbosity: Verbosity
  autoExecute: boolean
  voice: string
  speed: number
  timezone: string | null
}

export interface AutopilotSession extends AutopilotPreferences {
  sessionId: string
  status: 'active' | 'stopped'
  context: string | null
}

interface Row {
  session_id: string
  status: 'active' | 'stopped'
  context: string | null
  verbosity: Verbosity
  auto_execute: number
  voice: string
  speed: number
  timezone: string | null
}

export const DEFAULT_PREFERENCES: AutopilotPreferences = { verbosity: 'medium', autoExecute: false, voice: 'default', speed: 1, timezone: null }

/** One autopilot session per user, kept in the database. */
export class AutopilotStore {
  constructor(private readonly db: Database) {}

  get(userId: string): AutopilotSession | null {
    const row = this.db.query<Row, [string]>('SELECT * FROM voice_autopilot WHERE user_id = ?').get(userId)
    if (!row) return null
    return {
      sessionId: row.session_id,
      status: row.status,
      context: row.context,
      verbosity: row.verbosity,
      autoExecute: row.auto_execute === 1,
      voice: row.voice,
      speed: row.speed,
      timezone: row.timezone,
    }
  }

  /** Starts (or keeps) the user's session, with the preferences given merged over the stored ones. */
  start(userId: string, context: string | null | undefined, preferences: Partial<AutopilotPreferences>): AutopilotSession {
    const current = this.get(userId)
    const now = new Date().toISOString()
    const merged = { ...DEFAULT_PREFERENCES, ...(current ?? {}), ...preferences }
    // Starting again keeps the running session; a stopped one is started anew.
    const sessionId = current?.status === 'active' ? current.sessionId : crypto.randomUUID()
    const nextContext = context === undefined ? (current?.context ?? null) : context
    this.db.run(
      `INSERT INTO voice_autopilot (user_id, session_id, status, context, verbosity, auto_execute, voice, speed, timezone, started_at, updated_at)
       VALUES (?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(user_id) DO UPDATE SET session_id = excluded.session_id, status = 'active', context = excluded.context,
         verbosity = excluded.verbosity, auto_execute = excluded.auto_execute, voice = excluded.voice, speed = excluded.speed,
         timezone = excluded.timezone, started_at = CASE WHEN voice_autopilot.session_id = excluded.session_id THEN voice_autopilot.started_at ELSE excluded.started_at END,
         updated_at = excluded.updated_at`,
      [userId, sessionId, nextContext, merged.verbosity, merged.autoExecute ? 1 : 0, merged.voice, merged.speed, merged.timezone, now, now],
    )
    return this.get(userId)!
  }

  stop(userId: string): AutopilotSession | null {
    this.db.run("UPDATE voice_autopilot SET status = 'stopped', updated_at = ? WHERE user_id = ? AND status = 'active'", [new Date().toISOString(), userId])
    return this.get(userId)
  }
}
