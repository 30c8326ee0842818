import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp, startServices } from './app'
import { ConfigError, loadConfig } from './config'
import { StartupError } from './core/startup'
import { startMemoryGuard } from './core/memory-guard'

/** A fault that stops the server at start: one line on stderr, no stack trace, exit 1. */
function fail(message: string): never {
  console.error(message)
  process.exit(1)
}

function portTaken(config: { port: number; host: string }): void {
  const code = (error: unknown) => (error as { code?: string }).code
  if (config.port === 0) return
  try {
    // Probed before anything is created (data dir, first admin): a taken port stops the start untouched.
    Bun.listen({ hostname: config.host, port: config.port, socket: { data() {} } }).stop(true)
  } catch (error) {
    if (code(error) === 'EADDRINUSE') fail(`Port ${config.port} on ${config.host} is already in use (another server is listening there): stop it or set PORT to a free port`)
  }
}
import { shutdownOnSignals } from './shutdown'

async function start() {
  try {
    portTaken(loadConfig())
  } catch (error) {
    if (error instanceof ConfigError) fail(`Configuration error: ${error.message}`)
    throw error
  }
  let services
  try {
    services = await startServices()
  } catch (error) {
    if (error instanceof ConfigError) fail(`Configuration error: ${error.message}`)
    if (error instanceof StartupError) fail(error.message)
    throw error
  }
  const { config } = services
  let app
  try {
    app = buildApp(services).listen({
      port: config.port,
      hostname: config.host,
      // Elysia's Bun adapter listens with reusePort by default: a second server on a taken port
      // would start silently and split the requests with the first. Without it the port is ours alone.
      reusePort: false,
      // Bun's own cap sits above ours so oversized bodies get the contract's 413 ErrorResponse.
      maxRequestBodySize: config.maxRequestBytes * 2,
      idleTimeout: 120,
      // Bun's development mode (error pages, extra checks) costs throughput; opt in with NODE_ENV=development.
      development: process.env.NODE_ENV === 'development',
    })
  } catch (error) {
    services.db.close()
    services.analyticsDb.close()
    const code = (error as { code?: string }).code
    if (code === 'EADDRINUSE') fail(`Port ${config.port} on ${config.host} is already in use (another server is listening there): stop it or set PORT to a free port`)
    if (code === 'EACCES') fail(`Not allowed to listen on port ${config.port} on ${config.host}: choose a port above 1023 or run with the needed rights`)
    if (code === 'EADDRNOTAVAIL') fail(`Cannot listen on ${config.host}: the address is not on this machine (HOST)`)
    throw error
  }
  // Host operations (uagent admin restore) refuse to swap a data dir a live server is using.
  const pidFile = join(config.dataDir, 'server.pid')
  try {
    writeFileSync(pidFile, String(process.pid), { mode: 0o600 })
  } catch {}
  services.backups?.start()
  // Garbage is collected before it piles up next to large live buffers (see memory-guard.ts).
  startMemoryGuard()
  // Voice: the intent classifier's model is trained (once per training data, by a child process)
  // and cached in the data dir now, off the request path; it and the speech models load on first use.
  services.speech.warm().catch((error) => console.error(`voice: ${(error as Error).message}`))
  // The web app is built (when its sources changed since the last build; cached by their hash) and
  // loaded on its first request: an idle server that nobody opens in a browser does not carry it.
  console.log(`Universal Agent listening on http://${app.server?.hostname}:${app.server?.port} (data: ${config.dataDir}; web app at /app)`)
  // The pid file goes with the process, however it ends.
  process.on('exit', () => rmSync(pidFile, { force: true }))
  shutdownOnSignals(app, services)
}

await start()
