import type { Database } from 'bun:sqlite'
import type { AudioFormat } from '../../ml/speech/encoders'
import { type AudioRow, type AutopilotRow, type AutopilotSession, toSession, type VoiceStore } from './store'

/** Voice records in the server's SQLite database: every call answers at once. */
export class SqliteVoiceStore implements VoiceStore {
  readonly asynchronous = false
  /** The bytes are files in the audio folder only. */
  readonly keepsAudioBytes = false

  constructor(private readonly db: Database) {}

  recordAudio(row: AudioRow): void {
    this.db.run('INSERT INTO voice_audio (id, user_id, format, size, duration, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      row.id,
      row.user_id,
      row.format,
      row.size,
      row.duration,
      row.created_at,
    ])
  }

  audioBytes(): null {
    return null
  }

  audioWithoutBytes(): AudioRow[] {
    return []
  }

  /** The file is the bytes. */
  attachAudioBytes(): void {}

  findAudio(userId: string, id: string, format: AudioFormat): AudioRow | null {
    return this.db.query<AudioRow, [string, string, string]>('SELECT * FROM voice_audio WHERE id = ? AND user_id = ? AND format = ?').get(id, userId, format)
  }

  removeAudioBefore(cutoff: string): AudioRow[] {
    const old = this.db.query<AudioRow, [string]>('SELECT * FROM voice_audio WHERE created_at < ?').all(cutoff)
    for (const row of old) this.db.run('DELETE FROM voice_audio WHERE id = ?', [row.id])
    return old
  }

  autopilot(userId: string): AutopilotSession | null {
    const row = this.db.query<AutopilotRow, [string]>('SELECT * FROM voice_autopilot WHERE user_id = ?').get(userId)
    return row ? toSession(row) : null
  }

  saveAutopilot(userId: string, session: AutopilotSession, now: string): void {
    this.db.run(
      `INSERT INTO voice_autopilot (user_id, session_id, status, context, verbosity, auto_execute, voice, speed, timezone, started_at, updated_at)
       VALUES (?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(user_id) DO UPDATE SET session_id = excluded.session_id, status = 'active', context = excluded.context,
         verbosity = excluded.verbosity, auto_execute = excluded.auto_execute, voice = excluded.voice, speed = excluded.speed,
         timezone = excluded.timezone, started_at = CASE WHEN voice_autopilot.session_id = excluded.session_id THEN voice_autopilot.started_at ELSE excluded.started_at END,
         updated_at = excluded.updated_at`,
      [userId, session.sessionId, session.context, session.verbosity, session.autoExecute ? 1 : 0, session.voice, session.speed, session.timezone, now, now],
    )
  }

  stopAutopilot(userId: string, now: string): void {
    this.db.run("UPDATE voice_autopilot SET status = 'stopped', updated_at = ? WHERE user_id = ? AND status = 'active'", [now, userId])
  }
}
