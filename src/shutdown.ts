import type { Server } from 'bun'
import type { Services } from './app'

/** How long running requests get to finish once a shutdown starts (below Docker's 10 s to SIGKILL). */
export const SHUTDOWN_GRACE_MS = 5000

interface Stoppable {
  server: Server<unknown> | null
  stop(closeActiveConnections?: boolean): Promise<unknown>
}

/** What shutdown closes: the recorder and the database always; the rest when the server has it. */
export type ShutdownServices = Pick<Services, 'recorder' | 'db' | 'log'> & Partial<Pick<Services, 'analyticsDb' | 'postgres' | 'postgresMonitor' | 'redis'>> & Partial<Pick<Services, 'backups' | 'plugins' | 'speech' | 'mcp' | 'agents' | 'ingestJobs' | 'bus' | 'pool' | 'audit' | 'rag'>>

/**
 * Stops the server in order: no new connections; running requests (and open WebSockets) get up
 * to `graceMs` to finish, after which they are cut off; then the request records still pending
 * are written and the database is closed. Requests the app is still answering when the server
 * reports itself stopped (or that came through app.handle) are waited for too, within the same
 * `graceMs`, so that their records are written and the database is open while they run.
 */
export async function shutdown(app: Stoppable, services: ShutdownServices, graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
  services.backups?.stop()
  const deadline = Date.now() + graceMs
  const server = app.server
  if (server) {
    const running = server.pendingRequests + server.pendingWebSockets
    if (running) services.log(`Shutting down: waiting up to ${graceMs / 1000} s for ${running} running request(s) and socket(s)`)
    let timer: ReturnType<typeof setTimeout> | undefined
    const finished = await Promise.race([
      app.stop(false).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs)
      }),
    ])
    clearTimeout(timer)
    if (!finished) {
      services.log(`Shutting down: ${server.pendingRequests + server.pendingWebSockets} request(s) and socket(s) still running after ${graceMs / 1000} s, closing them`)
      await server.stop(true)
    }
  }
  // Requests counted by request recording and not answered yet (none once the grace is over).
  await services.recorder.idle(Math.max(0, deadline - Date.now()))
  await new Promise((resolve) => setImmediate(resolve))
  // A replica sharing the agent queue hands its running tasks back to it (on SQLite: nothing changes).
  if (services.agents?.sharesQueue) {
    await services.agents.handBack()
    services.agents.close()
  }
  // Ingestion jobs running here go back to the queue: picked up after a restart, or by another replica.
  if (services.ingestJobs) {
    await services.ingestJobs.handBack()
    services.ingestJobs.close()
  }
  services.bus?.close()
  services.plugins?.close()
  await services.mcp?.close()
  services.speech?.close()
  services.pool?.close()
  await services.recorder.close()
  await services.audit?.close()
  services.analyticsDb?.close()
  // The vector index thread (a build in flight is abandoned: the database never names its file).
  ;(services.rag?.store as { close?: () => void } | undefined)?.close?.()
  services.db.close()
  services.postgresMonitor?.close()
  services.redis?.close()
  await services.postgres?.close({ timeout: 2 })
}

/** SIGINT and SIGTERM shut the server down (see shutdown) and end the process; a second signal ends it at once. */
export function shutdownOnSignals(app: Stoppable, services: ShutdownServices, exit: (code: number) => void = (code) => process.exit(code)) {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      services.log(`${signal} again: exiting without waiting`)
      return exit(1)
    }
    stopping = true
    shutdown(app, services).then(
      () => exit(0),
      (error) => {
        services.log(`Shutdown failed: ${(error as Error)?.stack ?? String(error)}`)
        exit(1)
      },
    )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}
