import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { recordUsage } from '../../core/usage'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { answerQuestion } from './answer/answer'
import type { DocumentLibrary } from './documents/library'
import {
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

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse, 507: ErrorResponse }

export function ragModule(rag: RagService<RagStore>, auth: AuthService, limiter: RateLimiter, library: DocumentLibrary) {
  return new Elysia({ name: 'module:rag', prefix: '/rag', tags: ['RAG'] })
    .use(authPlugin(auth, limiter))
    .post('/ingest', ({ body, principal }) => library.ingest(principal.user.id, body.collection, body.documents), {
      auth: true,
      body: IngestRequest,
      response: { 200: IngestResponse, ...errors },
      detail: { summary: 'Add documents to a collection (chunked, embedded, indexed; re-ingesting an id replaces it)' },
    })
    .post(
      '/search',
      async ({ body, principal }) => {
        const found = await rag.search(principal.user.id, body.collection, body.query, body.limit ?? 5, body.threshold)
        return { ...found, results: await library.withPages(principal.user.id, body.collection, found.results) }
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
      detail: { summary: 'Your collections with document and chunk counts' },
    })
    .post('/collections', ({ body, principal }) => rag.createCollection(principal.user.id, body.name), {
      auth: true,
      body: CreateCollectionRequest,
      response: { 200: CreatedCollection, ...errors },
      detail: { summary: 'Create an empty collection (documents come later by ingest or upload); 409 when you have one of that name' },
    })
    .delete('/collections/:name', ({ params, principal }) => rag.deleteCollection(principal.user.id, params.name), {
      auth: true,
      params: CollectionParams,
      response: { 200: DeletedCollection, ...errors },
      detail: { summary: 'Delete a collection and everything in it' },
    })
    .delete('/collections/:name/documents/:id', ({ params, principal }) => rag.deleteDocument(principal.user.id, params.name, params.id), {
      auth: true,
      params: DocumentParams,
      response: { 200: DeletedDocument, ...errors },
      detail: { summary: 'Delete one document (its chunks leave both indexes)' },
    })
}
