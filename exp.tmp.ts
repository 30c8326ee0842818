import { RouteTable } from './src/modules/analytics/route-table'
import { Elysia } from 'elysia'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServices } from './src/app'
import { httpCore } from './src/core/http'
import { systemModule, healthModule } from './src/modules/system'
import { authModule } from './src/modules/auth'
import { requestRecording } from './src/modules/analytics/recording'
import { principalOf } from './src/core/auth'
import { UNMATCHED } from './src/modules/analytics/recorder'

const variant = process.argv[2]!
const services = createServices({ dataDir: mkdtempSync(join(tmpdir(), 'exp-')), env: {}, adminEmail: 'b@e.com', adminPassword: 'bench-password', rateLimitMax: 1e9, log: () => {} })
const { recorder, system, auth, limiter, config } = services
let plugin: any = new Elysia({ name: 'rec' })
let appRef: any
if (variant === 'full') plugin = requestRecording(recorder, new RouteTable(() => appRef.routes))
if (variant === 'afteronly') plugin = new Elysia({ name: 'rec' }).onAfterResponse({ as: 'global' }, ({ request, route, set }) => {
  recorder.record({ ts: Date.now(), method: request.method, route: route || UNMATCHED, status: set.status as number, durationMs: 1, userId: principalOf(request)?.user.id ?? null, promptTokens: 0, completionTokens: 0, model: null })
})
if (variant === 'onrequest') plugin = new Elysia({ name: 'rec' }).onRequest(({ request }) => {})
if (variant === 'maponly') plugin = new Elysia({ name: 'rec' }).mapResponse({ as: 'global' }, ({ responseValue }) => {})
if (variant === 'wrap') { const m = new WeakMap(); plugin = new Elysia({ name: 'rec' }).wrap((fn: any, request: Request) => { m.set(request, performance.now()); return fn }) }
if (variant === 'norecord') plugin = new Elysia({ name: 'rec' }).onAfterResponse({ as: 'global' }, ({ request, route, set }) => {})
const app: any = appRef = new Elysia({ normalize: 'typebox' }).use(plugin).use(healthModule(system)).use(httpCore({ maxRequestBytes: config.maxRequestBytes, maxRequestSize: config.maxRequestSize, limiter })).use(systemModule(system, auth, limiter)).use(authModule(auth, limiter)).listen({ port: 0, development: false })
const base = `http://127.0.0.1:${app.server!.port}`
const login = await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'b@e.com', password: 'bench-password' }) })).json() as any
console.log(JSON.stringify({ base, token: login.accessToken }))
// report cpu per request on stdin line
let last = process.cpuUsage()
let served = 0
setInterval(() => {}, 1000)
for await (const line of console) {
  const now = process.cpuUsage()
  console.log(JSON.stringify({ cpu: now.user + now.system - last.user - last.system }))
  last = now
}
