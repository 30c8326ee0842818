import type { PostgresMigration } from '.'

// user_id got its foreign key to users (ON DELETE CASCADE) in migration 017.
export const voice: PostgresMigration = {
  version: 10,
  name: 'voice',
  sql: `
    CREATE TABLE voice_audio (
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL,
      format TEXT NOT NULL CHECK (format IN ('mp3', 'wav', 'ogg')),
      size INTEGER NOT NULL,
      duration DOUBLE PRECISION NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX voice_audio_created ON voice_audio(created_at);
    CREATE TABLE voice_autopilot (
      user_id TEXT COLLATE "C" PRIMARY KEY,
      session_id TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'stopped')),
      context TEXT,
      verbosity TEXT NOT NULL DEFAULT 'medium',
      auto_execute BOOLEAN NOT NULL DEFAULT false,
      voice TEXT NOT NULL DEFAULT 'default',
      speed DOUBLE PRECISION NOT NULL DEFAULT 1,
      timezone TEXT,
      started_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
  `,
}
