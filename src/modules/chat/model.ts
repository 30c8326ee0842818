import { t } from 'elysia'
import { nonBlankText } from '../../core/schema'

export const MAX_MESSAGE = 32_000

const AssistantRef = t.String({ minLength: 1, maxLength: 400, description: 'Answer as this assistant: your own by name, one shared with you by name, id or <owner email>/<name>, or a built-in agent' })

const CollectionName = t.String({ minLength: 1, maxLength: 400, description: 'A collection you can read (RAG): your own by name, or one shared with you by name, id or <owner email>/<name>' })

export const Source = t.Object({
  id: t.String({ description: 'Document id' }),
  title: t.String(),
  chunk: t.Integer(),
  score: t.Number(),
  collection: t.String(),
  page: t.Optional(t.Integer({ description: 'PDF page of the passage' })),
  file: t.Optional(t.Boolean({ description: "A file of this conversation (collection is then \"conversation\", title the file's name)" })),
})

export const ChatRequest = t.Object({
  message: nonBlankText(MAX_MESSAGE, { description: '1..32000 characters, not blank' }),
  optimizePrompt: t.Optional(t.Boolean({ default: false })),
  context: t.Optional(t.Nullable(t.String({ maxLength: 100_000 }))),
  userId: t.Optional(t.Nullable(t.String({ maxLength: 100 }))),
  conversationId: t.Optional(t.Nullable(t.String({ maxLength: 100, description: 'Continue this conversation' }))),
  collection: t.Optional(t.Nullable(CollectionName)),
  collections: t.Optional(t.Nullable(t.Array(CollectionName, { minItems: 1, maxItems: 10, description: 'Ground the reply in these collections' }))),
  assistant: t.Optional(t.Nullable(AssistantRef)),
})

export const ChatResponse = t.Object({
  response: t.String(),
  metadata: t.Object({
    model: t.String(),
    tokens: t.Integer({ description: 'Prompt + completion tokens' }),
    responseTime: t.Integer({ description: 'Milliseconds' }),
    optimized: t.Boolean(),
    conversationId: t.String(),
    promptTokens: t.Integer(),
    completionTokens: t.Integer(),
    optimizedPrompt: t.Optional(t.String()),
    sources: t.Optional(t.Array(Source, { description: 'Passages a grounded reply was given: [n] in the reply is sources[n-1]' })),
    messageId: t.Optional(t.String({ description: 'The id of the stored message (absent for a regeneration: the question stays as it was)' })),
    replyId: t.Optional(t.String({ description: 'The id of the stored reply (to rate it, regenerate it…)' })),
    assistant: t.Optional(t.Object({ id: t.String(), name: t.String() }, { description: 'The assistant the reply came from' })),
    collectionsSkipped: t.Optional(t.Integer({ description: "The assistant's collections you cannot read, left out (their number, never their names)" })),
  }),
})

export const StreamQuery = t.Object({
  message: nonBlankText(MAX_MESSAGE),
  optimizePrompt: t.Optional(t.Boolean({ default: false, error: 'query.optimizePrompt: must be true or false' })),
  conversationId: t.Optional(t.String({ maxLength: 100 })),
  context: t.Optional(t.String({ maxLength: 100_000 })),
  collection: t.Optional(CollectionName),
  collections: t.Optional(t.String({ maxLength: 2100, description: 'Comma-separated collection references' })),
  assistant: t.Optional(AssistantRef),
})

/** The collections a request names, from `collection` and `collections` together. */
export function requestedCollections(collection?: string | null, collections?: string[] | string | null): string[] {
  const list = typeof collections === 'string' ? collections.split(',').map((c) => c.trim()).filter(Boolean) : (collections ?? [])
  return [...new Set([...(collection ? [collection] : []), ...list])]
}
