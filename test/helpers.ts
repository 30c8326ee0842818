import { buildApp, createServices, type AppOptions, type Services } from '../src/app'
import type { ChatMessage, GenerateOptions, Generator } from '../src/ml'
import { ensureFirstAdmin } from '../src/modules/auth/bootstrap'
import { ChatService } from '../src/modules/chat/service'

export { tempDir } from './temp'

export const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }

/** An in-memory server (no port, no files) with a known admin, plus small request helpers. */
export function makeServer(options: AppOptions = {}, customize?: (services: Services) => void) {
  const services = createServices({
    database: ':memory:',
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    env: {},
    log: process.env.HLOG ? console.error : () => {},
    ...options,
  })
  customize?.(services)
  // On PostgreSQL the first admin is made with a promise (startServices awaits it; here the first call does).
  return serverOf(services, options.postgres ? ensureFirstAdmin(services.auth, services.config, services.log) : undefined)
}

/**
 * The app built from `services` (made by createServices or startServices), with makeServer's
 * request helpers; the first request waits for `ready` when given.
 */
export function serverOf(services: Services, ready?: Promise<unknown> | void) {
  const app = buildApp(services)

  async function call(method: string, path: string, init: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    await ready
    const headers: Record<string, string> = { ...init.headers }
    if (init.token) headers.authorization = `Bearer ${init.token}`
    let body: string | undefined
    if (init.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
    }
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    let json: any
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, json, text }
  }

  async function login(email = ADMIN.email, password = ADMIN.password, mfaCode?: string) {
    const res = await call('POST', '/auth/login', { body: { email, password, mfaCode } })
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
    return res.json as { accessToken: string; refreshToken: string; sessionId: string; user: { id: string } }
  }

  /** Creates a plain user through the admin API and logs them in. */
  async function userSession(email: string, password = 'user-password-1') {
    const admin = await login()
    const created = await call('POST', '/auth/users', { token: admin.accessToken, body: { email, password, roles: ['user'] } })
    if (created.status !== 200) throw new Error(`create user failed: ${created.status} ${created.text}`)
    return login(email, password)
  }

  return { app, services, call, login, userSession }
}

/**
 * A scripted generator: replies with `reply` a word at a time, records every prompt it saw,
 * waits `delayMs` between pieces, and notes whether it was cancelled.
 */
export class ScriptedGenerator implements Generator {
  readonly id = 'test/scripted'
  /** Settable, to play a small model. */
  contextLength = 4096
  prompts: ChatMessage[][] = []
  /** The options of every call, in order. */
  options: GenerateOptions[] = []
  cancelled = false
  piecesSent = 0

  constructor(
    private readonly reply = 'The quick brown fox jumps over the lazy dog.',
    private readonly delayMs = 0,
  ) {}

  async countTokens(text: string) {
    return text.split(/\s+/).filter(Boolean).length
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    let text = ''
    for await (const piece of this.stream(messages, options, signal)) text += piece
    return { text, promptTokens: 1, completionTokens: await this.countTokens(text), finishReason: 'stop' as const }
  }

  async *stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    this.prompts.push(messages)
    this.options.push(options)
    for (const piece of this.reply.match(/\s*\S+/g) ?? []) {
      if (signal?.aborted) {
        this.cancelled = true
        return
      }
      if (this.delayMs) await Bun.sleep(this.delayMs)
      if (signal?.aborted) {
        this.cancelled = true
        return
      }
      this.piecesSent++
      yield piece
    }
  }
}

/** Server with a scripted generator in place of the configured one. */
export function makeServerWith(generator: Generator, options: AppOptions = {}) {
  return makeServer(options, (services) => {
    services.chat = new ChatService({
      conversations: services.conversations,
      generator: async () => generator,
      userExists: (id) => services.auth.getUser(id) !== null,
    })
  })
}

/**
 * A WebSocket to `/ws` of a server listening on `port`, opened, with its messages collected:
 * `next()` gives the oldest not yet taken (waiting up to 3 s; undefined when none came).
 */
export async function openInbox(port: number) {
  const { socket, inbox } = await openSocket(`ws://127.0.0.1:${port}/ws`)
  const next = async () => {
    for (let i = 0; i < 300 && !inbox.length; i++) await Bun.sleep(10)
    return inbox.shift()
  }
  return { socket, inbox, next }
}

/**
 * A WebSocket at `url`, opened, with its messages collected: `next(type)` takes the first message of
 * that type (or an `error`) waiting up to 10 s, and throws naming what came instead.
 */
export async function openSocket(url: string) {
  const socket = new WebSocket(url)
  const inbox: any[] = []
  socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
  await new Promise((resolve, reject) => {
    socket.onopen = resolve
    socket.onerror = reject
  })
  const next = async (type: string) => {
    for (let i = 0; i < 1000; i++) {
      const index = inbox.findIndex((message) => message.type === type || message.type === 'error')
      if (index !== -1) return inbox.splice(index, 1)[0]
      await Bun.sleep(10)
    }
    throw new Error(`no ${type} within 10 s: ${JSON.stringify(inbox)}`)
  }
  return { socket, inbox, next }
}

/** Reads `read()` every 50 ms until `done` holds of it or `ms` pass; the last value read. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  let value = await read()
  while (!done(value) && Date.now() < deadline) {
    await Bun.sleep(50)
    value = await read()
  }
  return value
}
