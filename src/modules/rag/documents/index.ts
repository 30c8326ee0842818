import { Elysia, t } from 'elysia'
import { authPlugin } from '../../../core/auth'
import type { RateLimiter } from '../../../core/rate-limit'
import type { AuthService } from '../../auth/service'
import { ErrorResponse } from '../../system/model'
import type { DocumentLibrary } from './library'
import { DocumentResponse, DocumentsQuery, DocumentsResponse, UploadBody, UploadResponse } from './model'
import { CollectionParams, DeletedDocument, DocumentParams } from '../model'
import type { RagService } from '../service'
import type { RagStore } from '../store'
import type { UploadService } from './uploads'
import { JobAccepted } from '../jobs/model'

const PathDocumentParams = t.Object({ name: t.String({ maxLength: 200 }), '*': t.String({ maxLength: 512 }) })
const STREAMED = 'multipart body, read as a stream by the handler'
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 413: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/** The knowledge base's documents: file uploads, the documents of a collection, one document's text. */
export function documentsModule(rag: RagService<RagStore>, library: DocumentLibrary, uploads: UploadService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:rag-documents', prefix: '/rag', tags: ['RAG'] })
    .use(authPlugin(auth, limiter))
    .post('/collections/:name/files', async ({ params, principal, request, status }) => {
      const result = await uploads.upload(principal.user.id, params.name, request)
      return result.kind === 'job' ? status(202, { jobId: result.jobId, status: result.status }) : result.body
    }, {
      auth: true,
      // The body is read as a stream by the handler (files go to disk as they arrive), not parsed
      // whole: this parser claims the body without reading it ('none' would also skip the global
      // size check that runs as a parse hook).
      parse: () => STREAMED,
      params: CollectionParams,
      response: { 200: UploadResponse, 202: JobAccepted, ...errors },
      detail: {
        summary:
          'Upload files (multipart/form-data): text is extracted from PDF, Word, HTML, Markdown, text and source files, and each is ingested as a document. Files that need OCR or take long to read: 202 with an ingestion job (GET /rag/jobs/{id})',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: UploadBody as object } } },
      },
    })
    .get(
      '/collections/:name/documents',
      ({ params, query, principal }) =>
        library.list(principal.user.id, params.name, { prefix: query.prefix, limit: query.limit ?? 100, offset: query.offset ?? 0, view: query.view ?? 'full' }),
      {
        auth: true,
        params: CollectionParams,
        query: DocumentsQuery,
        response: { 200: DocumentsResponse, ...errors },
        detail: { summary: 'Documents of a collection, by id (paginated; filter by id prefix; view=hashes lists only id, source and contentHash)' },
      },
    )
    .get('/collections/:name/documents/:id', ({ params, principal }) => library.get(principal.user.id, params.name, params.id), {
      auth: true,
      params: DocumentParams,
      response: { 200: DocumentResponse, ...errors },
      detail: { summary: 'One document: its metadata and full extracted text' },
    })
    // Ids are often paths (`guides/vpn.md`): sent with their slashes unencoded, they reach these.
    .get('/collections/:name/documents/*', ({ params, principal }) => library.get(principal.user.id, params.name, params['*']), {
      auth: true,
      params: PathDocumentParams,
      response: { 200: DocumentResponse, ...errors },
      // Aliases of the {id} routes for unencoded slashes: OpenAPI has no wildcard path parameter, so
      // they stay out of the document (the {id} operations say ids may be percent-encoded paths).
      detail: { hide: true, summary: 'One document whose id holds slashes, given as a path: its metadata and full extracted text' },
    })
    .delete('/collections/:name/documents/*', ({ params, principal }) => rag.deleteDocument(principal.user.id, params.name, params['*']), {
      auth: true,
      params: PathDocumentParams,
      response: { 200: DeletedDocument, ...errors },
      detail: { hide: true, summary: 'Delete one document whose id holds slashes, given as a path' },
    })
}
