import { t } from 'elysia'

export const Message = t.Object({
  role: t.Union([t.Literal('user'), t.Literal('assistant'), t.Literal('system')]),
  content: t.String(),
  timestamp: t.String({ format: 'date-time' }),
  tokens: t.Optional(t.Integer()),
  metadata: t.Optional(t.Record(t.String(), t.Unknown())),
})

export const Conversation = t.Object({
  id: t.String(),
  userId: t.String(),
  title: t.String(),
  messages: t.Array(Message),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
  assistant: t.Optional(t.Object({ id: t.String(), name: t.String() }, { description: 'The assistant this conversation is with' })),
})

export const ConversationsQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50, error: 'query.limit: must be an integer from 1 to 100' })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0, error: 'query.offset: must be an integer from 0 to 1000000000' })),
  userId: t.Optional(t.String({ maxLength: 100 })),
})

export const ConversationsResponse = t.Object({
  conversations: t.Array(Conversation),
  total: t.Integer(),
  hasMore: t.Boolean(),
})

export const ConversationParams = t.Object({ id: t.String({ maxLength: 100 }) })
export const OwnerQuery = t.Object({ userId: t.Optional(t.String({ maxLength: 100, description: "Another user's (admin only)" })) })
export const DeletedResponse = t.Object({ success: t.Boolean(), id: t.String() })
export const RenameRequest = t.Object({ title: t.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: '1..200 characters, not blank' }) })
