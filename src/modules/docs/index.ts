import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'
import pkg from '../../../package.json'
import { AppError } from '../../core/errors'
import type { RouteInfo } from '../../core/routes'
import type { SocketHandlers } from '../ws/registry'
import { buildOpenApiDocument } from './openapi'

// Swagger UI is served from the installed swagger-ui-dist package, never a CDN: the docs work offline.
const assetsDir = dirname(require.resolve('swagger-ui-dist/package.json'))
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'])

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Universal Agent API</title>
  <link rel="icon" href="/openapi/assets/favicon-32x32.png" />
  <link rel="stylesheet" href="/openapi/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/openapi/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi/json', dom_id: '#swagger-ui', persistAuthorization: true })
  </script>
</body>
</html>`

const html = () => new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } })

const DOCUMENTATION = {
  info: {
    title: 'Universal Agent API',
    version: pkg.version,
    description:
      'Offline, self-hosted AI agent server: chat, RAG, agents, voice, plugins, analytics. Every non-2xx response is an ErrorResponse; authenticate with `Authorization: Bearer <accessToken>` from POST /auth/login.',
  },
  components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
  security: [{ bearer: [] }],
}

/** OpenAPI JSON at /openapi/json (built once, from every route of the app), and the Swagger UI at /openapi and /swagger. */
export function docsModule(sockets?: SocketHandlers) {
  const docs = new Elysia({ name: 'module:docs' })
  let cached: { routes: number; json: string } | null = null
  const document = () => {
    const app = docs as unknown as { getGlobalRoutes(): RouteInfo[]; getGlobalDefinitions(): unknown }
    const count = app.getGlobalRoutes().length
    if (!cached || cached.routes !== count) {
      cached = { routes: count, json: JSON.stringify(buildOpenApiDocument(app, DOCUMENTATION, sockets?.types() ?? ['auth'])) }
    }
    return new Response(cached.json, { headers: { 'content-type': 'application/json' } })
  }
  return docs
    .get('/openapi/json', document, { detail: { hide: true } })
    .get('/openapi', html, { detail: { hide: true } })
    .get('/swagger', html, { detail: { hide: true } })
    .get(
      '/openapi/assets/:file',
      ({ params }) => {
        if (!ASSETS.has(params.file)) throw new AppError('NOT_FOUND', `No documentation asset named ${params.file}`)
        return Bun.file(join(assetsDir, params.file))
      },
      { detail: { hide: true } },
    )
}
