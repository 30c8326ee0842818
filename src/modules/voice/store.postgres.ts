import type { Postgres } from '../../db/postgres'
import type { AudioFormat } from '../../ml/speech/encoders'
import { type AudioRow, type AutopilotRow, type AutopilotSession, toSession, type VoiceStore } from './store'

/**
 * Voice records in PostgreSQL (UAGENT_DATABASE_URL), with the audio bytes (each server keeps a copy
 * of what it serves in its own audio folder).
 */
export class PostgresVoiceStore implements VoiceStore {
  readonly asynchronous = true
  readonly keepsAudioBytes = true

  constructor(private readonly sql: Postgres) {}

  async recordAudio(row: AudioRow, bytes?: Uint8Array): Promise<void> {
    await this.sql`INSERT INTO voice_audio (id, user_id, format, size, duration, created_at, bytes)
      VALUES (${row.id}, ${row.user_id}, ${row.format}, ${row.size}, ${row.duration}, ${row.created_at}, ${bytes ?? null})`
  }

  async audioWithoutBytes(since: string): Promise<AudioRow[]> {
    return [...(await this.sql`SELECT id, user_id, format, size, duration, created_at FROM voice_audio WHERE bytes IS NULL AND created_at >= ${since} ORDER BY created_at`)]
  }

  async attachAudioBytes(id: string, bytes: Uint8Array): Promise<void> {
    await this.sql`UPDATE voice_audio SET bytes = ${bytes} WHERE id = ${id} AND bytes IS NULL`
  }

  async audioBytes(id: string): Promise<Uint8Array | null> {
    const rows: { bytes: Uint8Array | null }[] = await this.sql`SELECT bytes FROM voice_audio WHERE id = ${id}`
    return rows[0]?.bytes ?? null
  }

  async findAudio(userId: string, id: string, format: AudioFormat): Promise<AudioRow | null> {
    const rows: AudioRow[] = await this.sql`SELECT id, user_id, format, size, duration, created_at FROM voice_audio WHERE id = ${id} AND user_id = ${userId} AND format = ${format}`
    return rows[0] ?? null
  }

  async removeAudioBefore(cutoff: string): Promise<AudioRow[]> {
    return [...(await this.sql`DELETE FROM voice_audio WHERE created_at < ${cutoff} RETURNING id, user_id, format, size, duration, created_at`)]
  }

  async autopilot(userId: string): Promise<AutopilotSession | null> {
    const rows: AutopilotRow[] = await this.sql`
      SELECT session_id, status, context, verbosity, auto_execute, voice, speed, timezone FROM voice_autopilot WHERE user_id = ${userId}`
    return rows[0] ? toSession(rows[0]) : null
  }

  async saveAutopilot(userId: string, session: AutopilotSession, now: string): Promise<void> {
    await this.sql`
      INSERT INTO voice_autopilot (user_id, session_id, status, context, verbosity, auto_execute, voice, speed, timezone, started_at, updated_at)
      VALUES (${userId}, ${session.sessionId}, 'active', ${session.context}, ${session.verbosity}, ${session.autoExecute}, ${session.voice}, ${session.speed}, ${session.timezone}, ${now}, ${now})
      ON CONFLICT (user_id) DO UPDATE SET session_id = excluded.session_id, status = 'active', context = excluded.context,
        verbosity = excluded.verbosity, auto_execute = excluded.auto_execute, voice = excluded.voice, speed = excluded.speed,
        timezone = excluded.timezone, started_at = CASE WHEN voice_autopilot.session_id = excluded.session_id THEN voice_autopilot.started_at ELSE excluded.started_at END,
        updated_at = excluded.updated_at`
  }

  async stopAutopilot(userId: string, now: string): Promise<void> {
    await this.sql`UPDATE voice_autopilot SET status = 'stopped', updated_at = ${now} WHERE user_id = ${userId} AND status = 'active'`
  }
}
