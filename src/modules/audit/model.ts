import { t } from 'elysia'
import { AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX } from './service'

export const AuditQuery = t.Object({
  since: t.Optional(t.String({ maxLength: 40, description: 'Events at or after this time (ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00:00Z)' })),
  until: t.Optional(t.String({ maxLength: 40, description: 'Events at or before this time (ISO 8601)' })),
  actor: t.Optional(t.String({ maxLength: 320, description: "The actor's user id or email" })),
  action: t.Optional(t.String({ maxLength: 100, description: 'An action (`group.created`), or a family of them (`group.*`)' })),
  target: t.Optional(t.String({ maxLength: 500, description: 'What the action was done to, as events name it (a user id, a group id, a collection id, a plugin name…)' })),
  limit: t.Optional(
    t.Integer({ minimum: 1, maximum: AUDIT_PAGE_MAX, default: AUDIT_PAGE_DEFAULT, error: `query.limit: must be an integer from 1 to ${AUDIT_PAGE_MAX}` }),
  ),
  cursor: t.Optional(t.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
})

const Actor = t.Object({ id: t.String(), email: t.String() })

export const AuditEvent = t.Object({
  id: t.String({ description: 'Time-ordered (UUIDv7)' }),
  at: t.String({ format: 'date-time' }),
  actor: t.Nullable(Actor, { description: 'Who did it; null when nobody was signed in (a failed login)' }),
  ip: t.Nullable(t.String()),
  action: t.String({ description: 'e.g. auth.login, user.created, group.member_added, plugin.installed' }),
  target: t.Nullable(t.String()),
  details: t.Record(t.String(), t.Unknown(), { description: 'What else there is to know; never a password, token or key' }),
  requestId: t.Nullable(t.String({ description: 'X-Request-Id of the request that did it' })),
})

export const AuditResponse = t.Object({
  events: t.Array(AuditEvent, { description: 'Newest first' }),
  nextCursor: t.Nullable(t.String({ description: 'Pass as cursor for the next (older) page; null on the last page' })),
})
