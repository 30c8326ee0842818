import { Elysia } from 'elysia'
import { AppError } from '../../core/errors'
import type { WebAsset, WebBundle } from './bundle'

function send(asset: WebAsset, request: Request, cacheControl: string): Response {
  const headers: Record<string, string> = { 'content-type': asset.type, 'cache-control': cacheControl, etag: asset.etag, vary: 'Accept-Encoding' }
  if (request.headers.get('if-none-match') === asset.etag) return new Response(null, { status: 304, headers })
  if (/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) {
    headers['content-encoding'] = 'gzip'
    return new Response(asset.gzip, { headers })
  }
  return new Response(asset.body, { headers })
}

// Hashed names never change content: cached for a year. The page is revalidated every time.
const IMMUTABLE = 'public, max-age=31536000, immutable'
const hashed = (name: string) => /-[a-z0-9]{6,}\.(js|css)$/.test(name)

/** The browser app at /app (every /app/* path is the same page; the app routes itself), and / sending browsers there. */
export function webModule(bundle: WebBundle) {
  const page = async ({ request }: { request: Request }) => send((await bundle.ready()).page, request, 'no-cache')
  return new Elysia({ name: 'module:web' })
    .get('/', ({ redirect }) => redirect('/app', 302), { detail: { hide: true } })
    .get('/app', page, { detail: { hide: true } })
    .get(
      '/app/assets/:file',
      async ({ params, request }) => {
        const asset = (await bundle.ready()).assets.get(params.file)
        if (!asset) throw new AppError('NOT_FOUND', `No web app file named ${params.file}`)
        return send(asset, request, hashed(asset.name) ? IMMUTABLE : 'public, max-age=3600')
      },
      { detail: { hide: true } },
    )
    .get('/app/*', page, { detail: { hide: true } })
}
