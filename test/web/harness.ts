import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { buildApp, createServices, type Services } from '../../src/app'
import type { Generator } from '../../src/ml'
import { shutdown } from '../../src/shutdown'
import { AgentService } from '../../src/modules/agents/service'
import { ChatService } from '../../src/modules/chat/service'
import { ADMIN, ScriptedGenerator } from '../helpers'
import { tempDir } from '../temp'

export { ADMIN, ScriptedGenerator }

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync']

export interface WebServer {
  base: string
  services: Services
  stop(): Promise<void>
}

/** The whole server on port 0 with a temporary data dir; chat (and optionally agents) answer with the given generator. */
export async function startServer(options: { chat?: Generator; agents?: Generator; env?: Record<string, string>; customize?: (services: Services) => void } = {}): Promise<WebServer> {
  const services = createServices({ dataDir: tempDir('web'), adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: options.env ?? {}, log: () => {} })
  options.customize?.(services)
  if (options.chat) {
    const generator = options.chat
    services.chat = new ChatService({ conversations: services.conversations, generator: async () => generator, userExists: (id) => services.auth.getUser(id) !== null })
  }
  if (options.agents) {
    const generator = options.agents
    services.agents = new AgentService({ db: services.db, rag: services.rag, generator: async () => generator, tools: services.tools, concurrency: 2, queueLimit: 10, retentionMs: 3600_000, log: () => {} })
  }
  const app = buildApp(services).listen({ port: 0, hostname: '127.0.0.1' })
  await services.web.ready()
  return {
    base: `http://127.0.0.1:${app.server!.port}`,
    services,
    // The server's own shutdown, with no grace: open connections are cut at once.
    stop: () => shutdown(app, services, 0),
  }
}

export interface Watched {
  browser: Browser
  context: BrowserContext
  page: Page
  /** Console errors and uncaught page errors seen so far. */
  consoleErrors: string[]
  /** Requests to any origin but the server's. */
  foreignRequests: string[]
  /** Responses with status >= 400, as "401 POST /auth/web/login" (the browser logs each one as a console error). */
  failedResponses: string[]
}

export async function openBrowser(base: string, viewport = { width: 1440, height: 900 }): Promise<Watched> {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
  const context = await browser.newContext({ viewport, baseURL: base })
  const consoleErrors: string[] = []
  const foreignRequests: string[] = []
  const failedResponses: string[] = []
  context.on('response', (response) => {
    if (response.status() >= 400) failedResponses.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`)
  })
  const origin = new URL(base).origin
  context.on('request', (request) => {
    const url = request.url()
    if (!url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin) foreignRequests.push(url)
  })
  const page = await context.newPage()
  watch(page, consoleErrors)
  context.on('page', (other) => watch(other, consoleErrors))
  return { browser, context, page, consoleErrors, foreignRequests, failedResponses }
}

function watch(page: Page, errors: string[]): void {
  page.on('console', (message) => {
    // Chromium logs every response >= 400 as "Failed to load resource"; those are counted, by
    // request, in failedResponses (tests say which ones they expect).
    if (/^Failed to load resource: the server responded with a status of [45]\d\d/.test(message.text())) return
    if (message.type() === 'error' || message.type() === 'warning') errors.push(`${message.type()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  page.on('dialog', (dialog) => void dialog.accept())
}

export async function signIn(page: Page, email = ADMIN.email, password = ADMIN.password): Promise<void> {
  await page.goto('/')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
}
