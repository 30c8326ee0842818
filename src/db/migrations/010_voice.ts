import type { Migration } from '.'

export const voice: Migration = {
  version: 10,
  name: 'voice',
  sql: `
    CREATE TABLE voice_audio (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      format TEXT NOT NULL CHECK (format IN ('mp3', 'wav', 'ogg')),
      size INTEGER NOT NULL,
      duration REAL NOT NULL,
      created_at TEXT NOT NULL
    );
    CREATE INDEX voice_audio_created ON voice_audio(created_at);
    CREATE TABLE voice_autopilot (
      user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      session_id TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'stopped')),
      context TEXT,
      verbosity TEXT NOT NULL DEFAULT 'medium',
      auto_execute INTEGER NOT NULL DEFAULT 0,
      voice TEXT NOT NULL DEFAULT 'default',
      speed REAL NOT NULL DEFAULT 1,
      timezone TEXT,
      started_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
  `,
}
