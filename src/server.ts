import { buildApp, createServices } from './app'
import { ConfigError } from './config'

function start() {
  let services
  try {
    services = createServices()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`)
      process.exit(1)
    }
    throw error
  }
  const { config } = services
  const app = buildApp(services).listen({
    port: config.port,
    hostname: config.host,
    // Bun's own cap sits above ours so oversized bodies get the contract's 413 ErrorResponse.
    maxRequestBodySize: config.maxRequestBytes * 2,
    idleTimeout: 120,
    // Bun's development mode (error pages, extra checks) costs throughput; opt in with NODE_ENV=development.
    development: process.env.NODE_ENV === 'development',
  })
  // Voice: train the intent classifier and load the command recognizer now, off the request path.
  services.speech.warm().catch((error) => console.error(`voice: ${(error as Error).message}`))
  console.log(`Universal Agent listening on http://${app.server?.hostname}:${app.server?.port} (data: ${config.dataDir})`)
  const shutdown = () => {
    app.stop()
    services.plugins.close()
    services.speech.close()
    services.db.close()
    process.exit(0)
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
}

start()
