import { Elysia } from 'elysia'
import { createReadStream, rmSync } from 'node:fs'
import { authPlugin } from '../../core/auth'
import { AppError } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import type { RequestAudit } from '../audit/context'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { BackupsResponse } from './model'
import type { BackupService } from './service'

const errors = { 401: ErrorResponse, 403: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse, 507: ErrorResponse }

/** Streams a file and removes it once sent (or once the client goes away). */
function streamOnce(path: string): ReadableStream<Uint8Array> {
  const source = createReadStream(path, { highWaterMark: 1024 * 1024 })
  const cleanup = () => rmSync(path, { force: true })
  return new ReadableStream<Uint8Array>({
    start(controller) {
      source.on('data', (chunk) => {
        controller.enqueue(new Uint8Array(chunk as Buffer))
        if ((controller.desiredSize ?? 1) <= 0) source.pause()
      })
      source.on('end', () => {
        cleanup()
        controller.close()
      })
      source.on('error', (error) => {
        cleanup()
        controller.error(error)
      })
    },
    pull() {
      source.resume()
    },
    cancel() {
      source.destroy()
      cleanup()
    },
  })
}

export function adminModule(backups: BackupService | null, auth: AuthService, limiter: RateLimiter, schedule: { intervalSeconds: number; keep: number }, audit: RequestAudit) {
  const need = () => {
    if (!backups) throw new AppError('CONFLICT', 'This server keeps its data in memory: there is nothing on disk to back up')
    return backups
  }
  return new Elysia({ name: 'module:admin', prefix: '/admin', tags: ['Administration'] })
    .use(authPlugin(auth, limiter))
    .post(
      '/backup',
      async ({ set, principal, request }) => {
        const service = need()
        const backup = await service.create(`.download-${Date.now()}-${crypto.randomUUID().slice(0, 8)}.tar.gz`)
        const filename = `uagent-backup-${backup.manifest.createdAt.replace(/[:.]/g, '-')}.tar.gz`
        audit.record(request, principal, { action: 'backup.created', target: filename, details: { size: backup.size, files: backup.manifest.files.length, via: 'download' } })
        return new Response(streamOnce(backup.path), {
          headers: {
            ...(set.headers as Record<string, string>),
            'content-type': 'application/gzip',
            'content-length': String(backup.size),
            'content-disposition': `attachment; filename="${filename}"`,
            'cache-control': 'no-store',
          },
        })
      },
      {
        admin: true,
        detail: {
          summary:
            'Make a consistent backup of the running server and download it (.tar.gz: database, key file, plugins, audio, with UAGENT_DATABASE_URL a pg_dump of PostgreSQL, manifest with checksums) (admin); 503 TOOL_UNAVAILABLE when the server runs on PostgreSQL and pg_dump is not installed',
          responses: {
            200: { description: 'The archive', content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } } },
            ...Object.fromEntries(
              Object.keys(errors).map((status) => [status, { description: 'ErrorResponse', content: { 'application/json': { schema: ErrorResponse as object } } }]),
            ),
          },
        },
      },
    )
    .get('/backups', () => ({ backups: backups?.list() ?? [], directory: 'backups', schedule }), {
      admin: true,
      response: { 200: BackupsResponse, ...errors },
      detail: { summary: 'Scheduled backups kept in <dataDir>/backups, newest first (admin)' },
    })
}
