import type { PostgresMigration } from '.'

// The synthesized audio itself, so that any server on the database can serve it (TOASTed out of
// line: reads of the other columns do not load it). Null for audio recorded before this version.
export const voiceAudioBytes: PostgresMigration = {
  version: 25,
  name: 'voice_audio_bytes',
  sql: `ALTER TABLE voice_audio ADD COLUMN bytes BYTEA;`,
}
