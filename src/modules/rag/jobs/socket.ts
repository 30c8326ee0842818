import type { SocketHandlers } from '../../ws/registry'
import type { IngestJobService } from './service'

/** Every authenticated socket gets `{type: "ingest_job", data}` for each new state of its user's ingestion jobs. */
export function registerIngestJobSocket(handlers: SocketHandlers, jobs: IngestJobService): void {
  handlers.onAuthenticated((principal, send) => jobs.watch(principal.user.id, (job) => send({ type: 'ingest_job', data: job })))
}
