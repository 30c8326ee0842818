import { t } from 'elysia'

export const BackupsResponse = t.Object({
  backups: t.Array(
    t.Object({
      name: t.String({ description: 'File name in <dataDir>/backups' }),
      size: t.Integer({ minimum: 0, description: 'Bytes' }),
      createdAt: t.String({ format: 'date-time' }),
    }),
  ),
  directory: t.String({ description: 'Where scheduled backups are kept, relative to the data dir' }),
  schedule: t.Object({
    intervalSeconds: t.Integer({ minimum: 0, description: 'UAGENT_BACKUP_INTERVAL; 0 when no backups are scheduled' }),
    keep: t.Integer({ minimum: 1, description: 'UAGENT_BACKUP_KEEP' }),
  }),
})
