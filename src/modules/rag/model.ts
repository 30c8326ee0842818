import { type TSchema, t } from 'elysia'
import { nonBlankText } from '../../core/schema'

const Metadata = t.Record(t.String(), t.Unknown())

export const IngestRequest = t.Object({
  collection: t.String({ minLength: 1, maxLength: 400 }),
  documents: t.Array(
    t.Object({
      id: t.String({ minLength: 1, maxLength: 512 }),
      content: t.String(),
      metadata: t.Optional(Metadata),
      source: t.Optional(t.Nullable(t.String({ maxLength: 4096, description: 'Where the document came from (a path)' }))),
      contentHash: t.Optional(t.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the source bytes; default: of content' })),
    }),
    { minItems: 1, maxItems: 1000, error: 'body.documents: must be an array of 1 to 1000 documents, each with a string id and content' },
  ),
})

export const IngestResponse = t.Object({
  success: t.Boolean(),
  ingested: t.Integer(),
  failed: t.Integer(),
  collection: t.String(),
  processingTime: t.Integer({ description: 'Milliseconds' }),
  errors: t.Array(t.Object({ id: t.String(), message: t.String() })),
  unchanged: t.Optional(t.Integer({ description: 'Documents whose id already held the same content hash: left as they were' })),
  documents: t.Optional(
    t.Array(
      t.Object({
        id: t.String(),
        status: t.Union([t.Literal('ingested'), t.Literal('unchanged'), t.Literal('failed')]),
        contentHash: t.String(),
        chunks: t.Optional(t.Integer()),
        message: t.Optional(t.String()),
      }),
    ),
  ),
})

export const SearchRequest = t.Object({
  query: nonBlankText(10_000),
  collection: t.String({ minLength: 1, maxLength: 400 }),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 5 })),
  threshold: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 1 }))),
})

export const SearchResult = t.Object({ id: t.String(), content: t.String(), score: t.Number(), metadata: Metadata })

export const SearchResponse = t.Object({
  results: t.Array(SearchResult),
  query: t.String(),
  totalResults: t.Integer(),
  searchTime: t.Integer({ description: 'Milliseconds' }),
})

export const AnswerRequest = t.Object({
  question: nonBlankText(10_000),
  collection: t.String({ minLength: 1, maxLength: 400 }),
  maxContext: t.Optional(t.Integer({ minimum: 1, maximum: 20, default: 3 })),
  includeContext: t.Optional(t.Boolean({ default: true })),
})

export const AnswerResponse = t.Object({
  answer: t.String(),
  sources: t.Array(t.Object({ id: t.String(), title: t.String(), relevanceScore: t.Number() })),
  context: t.Optional(t.Array(t.Object({ content: t.String(), source: t.String(), confidence: t.Number() }))),
})

const Role = t.Union([t.Literal('viewer'), t.Literal('editor'), t.Literal('manager')])
const UserRef = t.Object({ id: t.String(), email: t.String() })

const CollectionView = t.Object({
  id: t.String({ description: 'Stable id (a UUID): a reference to the collection that never changes' }),
  name: t.String(),
  owner: UserRef,
  access: t.Union([t.Literal('owner'), Role], { description: 'Your access: owner, or the highest role an entry gives you (you, a group of yours, everyone)' }),
  documents: t.Integer(),
  chunks: t.Integer(),
  embedder: t.String(),
  dimensions: t.Integer(),
  createdAt: t.String(),
})

export const CollectionsResponse = t.Object({ collections: t.Array(CollectionView) })

export const CreateCollectionRequest = t.Object({
  name: t.String({ minLength: 1, maxLength: 64, pattern: '\\S', error: 'body.name: 1 to 64 characters, not blank' }),
})
export const CreatedCollection = t.Object({ success: t.Boolean(), collection: CollectionView })

export const CollectionParams = t.Object({
  name: t.String({ maxLength: 400, description: 'A collection reference: your collection by name, an id, <owner email>/<name> (%2F), or a name shared with you' }),
})

const ShareType = t.Union([t.Literal('user'), t.Literal('group'), t.Literal('everyone')])

/** An access list as GET …/access shows it, for a kind whose roles are `role`. */
export function accessResponse<R extends TSchema>(role: R) {
  return t.Object({
    owner: UserRef,
    shares: t.Array(t.Object({ type: ShareType, id: t.Optional(t.String()), email: t.Optional(t.String()), name: t.Optional(t.String()), role })),
  })
}

/** The body of PUT …/access for a kind whose roles are `role`: the whole list. */
export function accessRequest<R extends TSchema>(role: R, description: string) {
  return t.Object({
    shares: t.Array(
      t.Object({
        type: ShareType,
        userId: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
        email: t.Optional(t.String({ minLength: 1, maxLength: 320 })),
        groupId: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
        name: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
        role,
      }),
      { maxItems: 1000, description },
    ),
  })
}

export const AccessResponse = accessResponse(Role)
export const AccessRequest = accessRequest(Role, 'The whole access list (replaces the one there): users by userId or email, groups by groupId or name, everyone')
export const DocumentParams = t.Object({ name: t.String({ maxLength: 400 }), id: t.String({ maxLength: 512 }) })
export const DeletedCollection = t.Object({ success: t.Boolean(), collection: t.String() })
export const DeletedDocument = t.Object({ success: t.Boolean(), collection: t.String(), id: t.String() })
