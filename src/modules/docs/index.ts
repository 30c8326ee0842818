import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'
import pkg from '../../../package.json'
import { AppError } from '../../core/errors'

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

/** OpenAPI JSON at /openapi/json, and the Swagger UI at /openapi and /swagger. */
export function docsModule() {
  return new Elysia({ name: 'module:docs' })
    .use(
      openapi({
        provider: null,
        documentation: {
          info: {
            title: 'Universal Agent API',
            version: pkg.version,
            description: 'Offline, self-hosted AI agent server: chat, RAG, agents, voice, plugins, analytics.',
          },
          components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
          security: [{ bearer: [] }],
        },
      }),
    )
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
