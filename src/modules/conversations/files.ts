import { AppError, notFound } from '../../core/errors'
import type { AuditContext } from '../audit/service'
import type { DocumentLibrary } from '../rag/documents/library'
import type { UploadService } from '../rag/documents/uploads'
import type { IngestJobService } from '../rag/jobs/service'
import { CONVERSATION_FILES_PREFIX, isConversationFiles } from '../rag/reserved'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'

/** A file attached to a conversation, as GET /conversations/{id}/files lists it. */
export interface ConversationFile {
  /** The document id: the file name as sent (an .mbox: one per message, `<name>#<Message-ID>`). */
  id: string
  name: string
  status: 'queued' | 'running' | 'ready' | 'failed'
  reason?: string
  type?: string
  bytes?: number
  chunks?: number
  pages?: number
  pagesDone?: number
  jobId?: string
}

/** What POST /conversations/{id}/files answers: the files (200), or the job reading them (202). */
export type AttachResult = { kind: 'done'; files: ConversationFile[] } | { kind: 'job'; jobId: string; status: 'queued' | 'running'; files: ConversationFile[] }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Jobs looked through for a conversation's files still being read (the newest). */
const JOBS_LOOKED_AT = 100

/**
 * Files attached to conversations. They are read exactly as uploads to the knowledge base are
 * (the same formats, limits, worker pool and 202 ingestion jobs: UploadService, IngestJobService)
 * into a collection the server keeps for the conversation (`__conversation-<id>`, rag/reserved.ts),
 * owned by the conversation's owner and listed nowhere. They go with the conversation: deleted with
 * it, never shared beyond it (its viewers see the list, never the collection).
 */
export class ConversationFiles {
  constructor(
    private readonly rag: RagService<RagStore>,
    private readonly library: DocumentLibrary,
    private readonly uploads: UploadService,
    private readonly jobs: IngestJobService,
  ) {}

  /** The collection of a conversation's files (conversation ids are UUIDs). */
  collectionName(conversationId: string): string {
    if (!UUID.test(conversationId)) throw notFound(`Conversation ${conversationId}`)
    return `${CONVERSATION_FILES_PREFIX}${conversationId}`
  }

  isFilesCollection(name: string): boolean {
    return isConversationFiles(name)
  }

  /** The collection to ground a conversation's replies in: its files' collection, when it has one. */
  async groundingCollection(ownerId: string, conversationId: string): Promise<string | null> {
    if (!UUID.test(conversationId)) return null
    const name = this.collectionName(conversationId)
    return (await this.rag.store.findCollection(ownerId, name)) ? name : null
  }

  /** Reads the files of a multipart request into the conversation (the caller is its owner). */
  async attach(ownerId: string, conversationId: string, request: Request, context?: AuditContext): Promise<AttachResult> {
    const name = this.collectionName(conversationId)
    if (!(await this.rag.store.findCollection(ownerId, name))) {
      await this.rag.createCollection(ownerId, name, context, true).catch((error) => {
        // Made by a concurrent upload: fine.
        if (!(error instanceof AppError && error.code === 'CONFLICT')) throw error
      })
    }
    const result = await this.uploads.upload(ownerId, name, request, context)
    if (result.kind === 'job') {
      const job = await this.jobs.get(ownerId, result.jobId)
      return { kind: 'job', jobId: result.jobId, status: result.status, files: job.files.map((file) => ({ ...jobFile(file), jobId: job.id })) }
    }
    return {
      kind: 'done',
      files: result.body.files.map((file) => ({
        id: file.id,
        name: file.name,
        status: file.status === 'failed' ? 'failed' : 'ready',
        ...(file.reason ? { reason: file.reason } : {}),
        ...(file.type ? { type: file.type } : {}),
        bytes: file.bytes,
        ...(file.chunks !== undefined ? { chunks: file.chunks } : {}),
        ...(file.pages !== undefined ? { pages: file.pages } : {}),
      })),
    }
  }

  /**
   * The conversation's files: those read (ready), and those of its ingestion jobs still queued or
   * running, or that failed there (with the reason). A file that failed at once was told in the
   * upload's answer and is not kept.
   */
  async list(ownerId: string, conversationId: string): Promise<ConversationFile[]> {
    const name = this.collectionName(conversationId)
    if (!(await this.rag.store.findCollection(ownerId, name))) return []
    const { documents } = await this.library.list(ownerId, name, { limit: 10_000, offset: 0, view: 'full' })
    const files = new Map<string, ConversationFile>()
    for (const document of documents as unknown as { id: string; type: string; chunks: number; bytes: number }[]) {
      files.set(document.id, { id: document.id, name: document.id, status: 'ready', type: document.type, bytes: document.bytes, chunks: document.chunks })
    }
    const { jobs } = await this.jobs.list(ownerId, { limit: JOBS_LOOKED_AT, offset: 0 })
    // Oldest first, so that a later upload of the same file tells its state.
    for (const job of jobs.filter((job) => job.collection === name).reverse()) {
      for (const file of job.files) {
        const view = { ...jobFile(file), jobId: job.id }
        if (view.status === 'queued' || view.status === 'running') files.set(file.id, view)
        else if (view.status === 'failed' && !files.has(file.id)) files.set(file.id, view)
      }
    }
    return [...files.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /** Removes one file (404 when the conversation has none of that id). */
  async remove(ownerId: string, conversationId: string, fileId: string, context?: AuditContext): Promise<void> {
    const name = this.collectionName(conversationId)
    if (!(await this.rag.store.findCollection(ownerId, name))) throw notFound(`File ${fileId}`)
    try {
      await this.rag.deleteDocument(ownerId, name, fileId, context)
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') throw notFound(`File ${fileId}`)
      throw error
    }
  }

  /** Removes every file of a conversation (it is being deleted). */
  async removeAll(ownerId: string, conversationId: string, context?: AuditContext): Promise<void> {
    if (!UUID.test(conversationId)) return
    const name = this.collectionName(conversationId)
    const row = await this.rag.store.findCollection(ownerId, name)
    if (!row) return
    // Jobs still reading files into it stop.
    const { jobs } = await this.jobs.list(ownerId, { limit: JOBS_LOOKED_AT, offset: 0 })
    for (const job of jobs) if (job.collection === name && (job.status === 'queued' || job.status === 'running')) await this.jobs.cancel(ownerId, job.id).catch(() => undefined)
    await this.rag.deleteCollection(ownerId, name, context)
  }
}

function jobFile(file: { id: string; name: string; status: string; reason?: string; type?: string; bytes: number; chunks?: number; pages?: number; pagesDone?: number }): ConversationFile {
  const status: ConversationFile['status'] =
    file.status === 'queued' || file.status === 'running' ? file.status : file.status === 'ingested' || file.status === 'unchanged' ? 'ready' : 'failed'
  return {
    id: file.id,
    name: file.name,
    status,
    ...(status === 'failed' ? { reason: file.reason ?? (file.status === 'cancelled' ? 'cancelled' : 'failed') } : {}),
    ...(file.type ? { type: file.type } : {}),
    bytes: file.bytes,
    ...(file.chunks !== undefined ? { chunks: file.chunks } : {}),
    ...(file.pages !== undefined ? { pages: file.pages } : {}),
    ...(file.pagesDone !== undefined ? { pagesDone: file.pagesDone } : {}),
  }
}
