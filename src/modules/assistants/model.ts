import { t } from 'elysia'
import { AccessRequest, AccessResponse } from '../rag/model'

export const ASSISTANT_NAME = /^[^\s/][^/]{0,63}$/u
export const MAX_INSTRUCTIONS = 20_000

const CollectionRef = t.String({ minLength: 1, maxLength: 400, description: 'A collection you can read: your own by name, or one shared with you by name, id or <owner email>/<name>' })
const ToolName = t.String({ minLength: 3, maxLength: 200, description: 'A tool: a plugin action (<plugin>__<action>) or a registered MCP server tool, as GET /plugins and the agents list them' })

const fields = {
  description: t.Optional(t.String({ maxLength: 2000 })),
  instructions: t.Optional(t.String({ maxLength: MAX_INSTRUCTIONS, description: 'The system prompt: at most 20,000 characters' })),
  collections: t.Optional(t.Array(CollectionRef, { maxItems: 20, description: 'Collections it answers from (you must be able to read each)' })),
  tools: t.Optional(t.Array(ToolName, { maxItems: 50 })),
  model: t.Optional(t.Nullable(t.String({ minLength: 1, maxLength: 200, description: 'A chat model this server serves (GET /v1/models); null: the server default' }))),
  temperature: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 2 }))),
  starters: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 500 }), { maxItems: 8, description: 'Suggested first messages, shown on a new chat' })),
}

export const AssistantName = t.String({ minLength: 1, maxLength: 64, pattern: '^[^\\s/][^/]{0,63}$', description: '1..64 characters, no "/", not starting with a space; unique per owner' })

export const CreateAssistant = t.Object({ name: AssistantName, ...fields })
export const UpdateAssistant = t.Object({ name: t.Optional(AssistantName), ...fields })

const UserRef = t.Object({ id: t.String(), email: t.String() })

export const AssistantView = t.Object({
  id: t.String({ description: 'A UUID (built-in agents: builtin:<name>)' }),
  name: t.String(),
  description: t.String(),
  instructions: t.String(),
  collections: t.Array(t.Object({ id: t.String(), name: t.String(), owner: UserRef }), { description: 'Its collections that you can read' }),
  collectionsHidden: t.Integer({ description: 'Its collections you cannot read: their number, never their names' }),
  tools: t.Array(t.String()),
  model: t.Nullable(t.String()),
  temperature: t.Nullable(t.Number()),
  starters: t.Array(t.String()),
  owner: UserRef,
  access: t.Union([t.Literal('owner'), t.Literal('manager'), t.Literal('editor'), t.Literal('viewer')]),
  builtin: t.Boolean({ description: 'A built-in agent, read-only' }),
  createdAt: t.String(),
  updatedAt: t.String(),
})

export const AssistantList = t.Object({ assistants: t.Array(AssistantView) })
export const AssistantParams = t.Object({
  ref: t.String({ minLength: 1, maxLength: 400, description: 'An assistant reference: your own by name, an id, <owner email>/<name> (%2F), or a name shared with you' }),
})
export const DeletedAssistant = t.Object({ success: t.Boolean(), id: t.String() })

export const AssistantAccessRequest = t.Object({
  ...AccessRequest.properties,
  shareCollections: t.Optional(t.Boolean({ description: "Also give the same users and groups viewer on the assistant's collections that you manage" })),
})
export const AssistantAccessResponse = t.Object({
  ...AccessResponse.properties,
  collectionsShared: t.Optional(t.Array(t.String(), { description: 'With shareCollections: the collections (<owner email>/<name>) whose access lists were extended' })),
})
