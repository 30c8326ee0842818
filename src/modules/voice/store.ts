import type { MaybePromise } from '../../db/maybe-promise'
import type { AudioFormat } from '../../ml/speech/encoders'

export interface AudioRow {
  id: string
  user_id: string
  format: AudioFormat
  size: number
  duration: number
  created_at: string
}

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

export const DEFAULT_PREFERENCES: AutopilotPreferences = { verbosity: 'medium', autoExecute: false, voice: 'default', speed: 1, timezone: null }

/**
 * The voice module's records, whatever the backend: who owns each synthesized audio file, and one
 * autopilot session per user. The SQLite adapter answers at once (`asynchronous: false`), as
 * before, and the audio bytes are only files in the audio folder; the PostgreSQL adapter answers
 * with promises and keeps the bytes too (`keepsAudioBytes`), so that every server sharing the
 * database can serve them.
 */
export interface VoiceStore {
  readonly asynchronous: boolean
  /** Whether recordAudio keeps the bytes, and audioBytes gives them back. */
  readonly keepsAudioBytes: boolean
  /** Records an audio file; a store that keeps audio bytes keeps `bytes` with it. */
  recordAudio(row: AudioRow, bytes?: Uint8Array): MaybePromise<void>
  /** The bytes recorded with an audio file (null: not kept, or gone). */
  audioBytes(id: string): MaybePromise<Uint8Array | null>
  /** Audio recorded without its bytes (copied from a SQLite server) made at or after `since`; none for a store that keeps no bytes. */
  audioWithoutBytes(since: string): MaybePromise<AudioRow[]>
  /** Keeps the bytes of audio recorded without them (an audio file that has them keeps them). */
  attachAudioBytes(id: string, bytes: Uint8Array): MaybePromise<void>
  /** The user's audio record of that id and format, or null. */
  findAudio(userId: string, id: string, format: AudioFormat): MaybePromise<AudioRow | null>
  /** Deletes the records made before `cutoff` and returns them (their files go next). */
  removeAudioBefore(cutoff: string): MaybePromise<AudioRow[]>
  autopilot(userId: string): MaybePromise<AutopilotSession | null>
  /** Writes an active session (a new one, or the running one kept with its start time). */
  saveAutopilot(userId: string, session: AutopilotSession, now: string): MaybePromise<void>
  stopAutopilot(userId: string, now: string): MaybePromise<void>
}

/** The session a start leaves: the preferences given merged over the stored ones; a running session is kept, a stopped one started anew. */
export function startedSession(current: AutopilotSession | null, context: string | null | undefined, preferences: Partial<AutopilotPreferences>): AutopilotSession {
  const merged = { ...DEFAULT_PREFERENCES, ...(current ?? {}), ...preferences }
  return {
    verbosity: merged.verbosity,
    autoExecute: merged.autoExecute,
    voice: merged.voice,
    speed: merged.speed,
    timezone: merged.timezone,
    sessionId: current?.status === 'active' ? current.sessionId : crypto.randomUUID(),
    status: 'active',
    context: context === undefined ? (current?.context ?? null) : context,
  }
}

export interface AutopilotRow {
  session_id: string
  status: 'active' | 'stopped'
  context: string | null
  verbosity: Verbosity
  auto_execute: number | boolean
  voice: string
  speed: number
  timezone: string | null
}

export function toSession(row: AutopilotRow): AutopilotSession {
  return {
    sessionId: row.session_id,
    status: row.status,
    context: row.context,
    verbosity: row.verbosity,
    autoExecute: row.auto_execute === 1 || row.auto_execute === true,
    voice: row.voice,
    speed: row.speed,
    timezone: row.timezone,
  }
}
