import { t } from 'elysia'
import { accessRequest, accessResponse } from '../rag/model'

export const Message = t.Object({
  id: t.String({ description: 'Stable message id' }),
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
  q: t.Optional(
    t.String({
      maxLength: 500,
      description: 'Search: conversations whose title or one message holds every word (each a word start), own and shared, newest first, each with `match` and, in `messages`, only the message that matched',
    }),
  ),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50, error: 'query.limit: must be an integer from 1 to 100' })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0, error: 'query.offset: must be an integer from 0 to 1000000000' })),
  userId: t.Optional(t.String({ maxLength: 100 })),
})

/** A conversation as listed: with `match` in a search's answer, `access` and `owner` for every one. */
export const ListedConversation = t.Composite([
  Conversation,
  t.Object({
    access: t.Optional(t.Union([t.Literal('owner'), t.Literal('viewer')], { description: 'Your access: owner, or viewer of a conversation shared with you' })),
    owner: t.Optional(t.Object({ id: t.String(), email: t.String() })),
    match: t.Optional(t.String({ description: 'Search: a short excerpt of what matched' })),
  }),
])

export const ConversationsResponse = t.Object({
  conversations: t.Array(ListedConversation),
  total: t.Integer(),
  hasMore: t.Boolean(),
})

export const ConversationParams = t.Object({ id: t.String({ maxLength: 100 }) })
export const OwnerQuery = t.Object({ userId: t.Optional(t.String({ maxLength: 100, description: "Another user's (admin only)" })) })
export const DeletedResponse = t.Object({ success: t.Boolean(), id: t.String() })
export const RenameRequest = t.Object({ title: t.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: '1..200 characters, not blank' }) })

export const NewConversation = t.Object({ title: t.Optional(t.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'Default: named by its first message' })) })

export const MessageParams = t.Object({ id: t.String({ maxLength: 100 }), messageId: t.String({ maxLength: 100 }) })
export const FileParams = t.Object({ id: t.String({ maxLength: 100 }), fileId: t.String({ minLength: 1, maxLength: 512 }) })

const CollectionRef = t.String({ minLength: 1, maxLength: 400 })
const Grounding = {
  collection: t.Optional(t.Nullable(CollectionRef)),
  collections: t.Optional(t.Nullable(t.Array(CollectionRef, { minItems: 1, maxItems: 10, description: 'Ground the new reply in these collections (default: those the replaced reply was grounded in)' }))),
}

export const RegenerateRequest = t.Optional(t.Object(Grounding))
export const EditRequest = t.Object({
  content: t.String({ minLength: 1, maxLength: 32_000, pattern: '\\S', description: 'The message anew: 1..32000 characters, not blank' }),
  ...Grounding,
})

export const FeedbackRequest = t.Object({
  rating: t.Union([t.Literal('up'), t.Literal('down')], { description: 'up or down', error: 'body.rating: must be "up" or "down"' }),
  note: t.Optional(t.Nullable(t.String({ maxLength: 2000 }))),
})
export const FeedbackResponse = t.Object({
  success: t.Boolean(),
  messageId: t.String(),
  rating: t.Union([t.Literal('up'), t.Literal('down')]),
  note: t.Optional(t.Nullable(t.String())),
  model: t.String({ description: 'The model of the rated reply' }),
})
export const RatingsResponse = t.Object({
  ratings: t.Record(t.String(), t.Object({ rating: t.Union([t.Literal('up'), t.Literal('down')]), note: t.Optional(t.Nullable(t.String())) }), { description: 'Your rating of each reply you rated, by message id' }),
})

export const ConversationFile = t.Object({
  id: t.String({ description: 'File id (the document id: the file name as sent)' }),
  name: t.String(),
  status: t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('ready'), t.Literal('failed')]),
  reason: t.Optional(t.String({ description: 'Why it failed' })),
  type: t.Optional(t.String()),
  bytes: t.Optional(t.Integer()),
  chunks: t.Optional(t.Integer()),
  pages: t.Optional(t.Integer()),
  pagesDone: t.Optional(t.Integer()),
  jobId: t.Optional(t.String({ description: 'The ingestion job reading it (GET /rag/jobs/{id})' })),
})
export const FilesResponse = t.Object({ files: t.Array(ConversationFile) })
export const FilesAccepted = t.Object({ jobId: t.String(), status: t.Union([t.Literal('queued'), t.Literal('running')]), files: t.Array(ConversationFile) })
export const FileDeleted = t.Object({ success: t.Boolean(), id: t.String() })

export const ExportQuery = t.Object({
  format: t.Optional(t.Union([t.Literal('markdown'), t.Literal('json')], { default: 'markdown', error: 'query.format: must be markdown or json' })),
})

const ViewerRole = t.Literal('viewer', { description: 'The one role of a shared conversation: read, export, rate', error: 'role: a conversation is shared to read only: the role is viewer' })

export const ConversationAccessResponse = accessResponse(ViewerRole)

export const ConversationAccessRequest = accessRequest(
  ViewerRole,
  'The whole access list (replaces the one there): users by userId or email, groups by groupId or name, everyone; role viewer',
)
