import type { PostgresMigration } from '.'

/**
 * With the accounts in PostgreSQL (migration 001), the tables that name a user get the foreign
 * key SQLite has always had: deleting a user deletes their conversations, API keys, agent tasks
 * and voice records by cascade. Rows of users that do not exist here (written while the accounts
 * were still in SQLite, whose users were deleted or never copied) are deleted first, or the
 * constraints could not be added.
 */
export const userForeignKeys: PostgresMigration = {
  version: 17,
  name: 'user_foreign_keys',
  sql: `
    DELETE FROM conversations WHERE user_id NOT IN (SELECT id FROM users);
    DELETE FROM api_keys WHERE user_id NOT IN (SELECT id FROM users);
    DELETE FROM agent_tasks WHERE user_id NOT IN (SELECT id FROM users);
    DELETE FROM voice_audio WHERE user_id NOT IN (SELECT id FROM users);
    DELETE FROM voice_autopilot WHERE user_id NOT IN (SELECT id FROM users);
    ALTER TABLE conversations ADD CONSTRAINT conversations_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;
    ALTER TABLE api_keys ADD CONSTRAINT api_keys_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;
    ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;
    ALTER TABLE voice_audio ADD CONSTRAINT voice_audio_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;
    ALTER TABLE voice_autopilot ADD CONSTRAINT voice_autopilot_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;
    CREATE INDEX voice_audio_user ON voice_audio(user_id);
  `,
}
