import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { recordUsage } from '../../core/usage'
import type { AuthService } from '../auth/service'
import { type AddressOf, auditContextOf } from '../audit/context'
import type { CollectionSharing } from './access/sharing'
import { ErrorResponse } from '../system/model'
import { answerQuestion } from './answer/answer'
import type { DocumentLibrary } from './documents/library'
import {
  AccessRequest,
  AccessResponse,
  AnswerRequest,
  AnswerResponse,
  CollectionParams,
  CollectionsResponse,
  CreateCollectionRequest,
  CreatedCollection,
  DeletedCollection,
  DeletedDocument,
  DocumentParams,
  IngestRequest,
  IngestResponse,
  SearchRequest,
  SearchResponse,
} from './model'
import type { RagService } from './service'
import type { RagStore } from './store'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse, 507: ErrorResponse }

export function ragModule(rag: RagService<RagStore>, auth: AuthService, limiter: RateLimiter, library: DocumentLibrary, sharing: CollectionSharing, addressOf: AddressOf) {
  return new Elysia({ name: 'module:rag', prefix: '/rag', tags: ['RAG'] })
    .use(authPlugin(auth, limiter))
    .post(
      '/ingest',
      // A client that goes away stops the ingest between batches, its embedding with it (see RagService.ingest).
      ({ body, principal, request }) => library.ingest(principal.user.id, body.collection, body.documents, auditContextOf(request, principal, addressOf), { signal: request.signal }),
      {
        auth: true,
        body: IngestRequest,
        response: { 200: IngestResponse, ...errors },
        detail: { summary: 'Add documents to a collection (chunked, embedded, indexed; re-ingesting an id replaces it)' },
      },
    )
    .post(
      '/search',
      async ({ body, principal }) => {
        // Resolved once (the access check) for the search and its pages.
        const collection = await rag.collection(principal.user.id, body.collection)
        const found = await rag.searchIn(principal.user.id, collection, body.query, body.limit ?? 5, body.threshold)
        return { ...found, results: await library.withPagesIn(collection, found.results) }
      },
      {
        auth: true,
        body: SearchRequest,
        response: { 200: SearchResponse, ...errors },
        detail: { summary: 'Hybrid search (vector + BM25) over a collection; scores in [0, 1]' },
      },
    )
    .post(
      '/answer',
      ({ body, principal, request }) =>
        answerQuestion(
          rag,
          principal.user.id,
          {
            question: body.question,
            collection: body.collection,
            maxContext: body.maxContext ?? 3,
            includeContext: body.includeContext ?? true,
          },
          (usage) => recordUsage(request, usage),
        ),
      {
        auth: true,
        body: AnswerRequest,
        response: { 200: AnswerResponse, ...errors },
        detail: { summary: 'Answer a question from a collection, citing passages as [n]' },
      },
    )
    .get('/collections', ({ principal }) => rag.listCollections(principal.user.id), {
      auth: true,
      response: { 200: CollectionsResponse, ...errors },
      detail: { summary: 'Your collections and those shared with you: id, owner, your access, document and chunk counts' },
    })
    .post('/collections', ({ body, principal, request }) => rag.createCollection(principal.user.id, body.name, auditContextOf(request, principal, addressOf)), {
      auth: true,
      body: CreateCollectionRequest,
      response: { 200: CreatedCollection, ...errors },
      detail: { summary: 'Create an empty collection (documents come later by ingest or upload); 409 when you have one of that name' },
    })
    .delete('/collections/:name', ({ params, principal, request }) => rag.deleteCollection(principal.user.id, params.name, auditContextOf(request, principal, addressOf)), {
      auth: true,
      params: CollectionParams,
      response: { 200: DeletedCollection, ...errors },
      detail: { summary: 'Delete a collection and everything in it (its owner, a manager, an admin)' },
    })
    .get('/collections/:name/access', ({ params, principal }) => sharing.get(principal.user.id, params.name), {
      auth: true,
      params: CollectionParams,
      response: { 200: AccessResponse, ...errors },
      detail: { summary: "A collection's owner and access list (its owner, a manager, an admin)" },
    })
    .put(
      '/collections/:name/access',
      ({ params, body, principal, request }) => sharing.replace({ ...auditContextOf(request, principal, addressOf), userId: principal.user.id }, params.name, body.shares),
      {
        auth: true,
        params: CollectionParams,
        body: AccessRequest,
        response: { 200: AccessResponse, ...errors },
        detail: { summary: "Replace a collection's access list: users, groups and everyone, each viewer, editor or manager (its owner, a manager, an admin)" },
      },
    )
    .delete('/collections/:name/documents/:id', ({ params, principal, request }) => rag.deleteDocument(principal.user.id, params.name, params.id, auditContextOf(request, principal, addressOf)), {
      auth: true,
      params: DocumentParams,
      response: { 200: DeletedDocument, ...errors },
      detail: { summary: 'Delete one document (its chunks leave both indexes)' },
    })
}
