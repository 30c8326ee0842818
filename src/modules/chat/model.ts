import { t } from 'elysia'
import { nonBlankText } from '../../core/schema'

export const MAX_MESSAGE = 32_000

export const ChatRequest = t.Object({
  message: nonBlankText(MAX_MESSAGE, { description: '1..32000 characters, not blank' }),
  optimizePrompt: t.Optional(t.Boolean({ default: false })),
  context: t.Optional(t.Nullable(t.String({ maxLength: 100_000 }))),
  userId: t.Optional(t.Nullable(t.String({ maxLength: 100 }))),
  conversationId: t.Optional(t.Nullable(t.String({ maxLength: 100, description: 'Continue this conversation' }))),
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
  }),
})

export const StreamQuery = t.Object({
  message: nonBlankText(MAX_MESSAGE),
  optimizePrompt: t.Optional(t.Boolean({ default: false, error: 'query.optimizePrompt: must be true or false' })),
  conversationId: t.Optional(t.String({ maxLength: 100 })),
  context: t.Optional(t.String({ maxLength: 100_000 })),
})
