import type { PostgresMigration } from '.'

/**
 * With the accounts in PostgreSQL (migration 001), the tables that name a user get the foreign
 * key SQLite has always had: deleting a user deletes their conversations, API keys, agent tasks
 * and voice records by cascade, and a row for a user who does not exist is refused.
 *
 * The keys are added NOT VALID: rows already there are not checked, and none is deleted. On a
 * database that kept these tables while the accounts were still in SQLite, `users` is created
 * empty by this same upgrade, so every existing row would count as an orphan: deleting them
 * would delete every conversation, key, task and voice record. They stay, and belong to their
 * owners again once those accounts are in PostgreSQL under the same ids.
 */
export const userForeignKeys: PostgresMigration = {
  version: 17,
  name: 'user_foreign_keys',
  sql: `
    ALTER TABLE conversations ADD CONSTRAINT conversations_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
    ALTER TABLE api_keys ADD CONSTRAINT api_keys_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
    ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
    ALTER TABLE voice_audio ADD CONSTRAINT voice_audio_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
    ALTER TABLE voice_autopilot ADD CONSTRAINT voice_autopilot_user_fk FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE NOT VALID;
    CREATE INDEX voice_audio_user ON voice_audio(user_id);
  `,
}
