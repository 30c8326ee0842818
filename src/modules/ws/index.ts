import { Elysia } from 'elysia'
import { AppError, type ErrorCode, ERROR_STATUS } from '../../core/errors'
import { storageFull, STORAGE_FULL_MESSAGE } from '../../core/storage'
import { DATABASE_UNAVAILABLE_MESSAGE, databaseUnavailable, UNSTORABLE_TEXT_MESSAGE, unstorableText } from '../../core/database'
import { findTooDeep, tooDeepMessage } from '../../core/json-depth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService, Principal } from '../auth/service'
import type { SocketHandlers } from './registry'

/** Seconds a socket may stay silent before the server closes it (Bun pings in between). */
export const WS_IDLE_TIMEOUT = 120

interface SocketState {
  principal: Principal | null
  running: Set<AbortController>
  /** An `auth` still being checked (API keys in PostgreSQL): messages after it wait for it. */
  authenticating?: Promise<unknown>
  /** Stops the events pushed to the socket since its `auth` (SocketHandlers.onAuthenticated). */
  stopFeeds?: () => void
}

type Reply = Record<string, unknown> & { type: string }

/** How a message type is named in analytics when the frame was not a message, or its type is unknown. */
export const INVALID_MESSAGE = '(invalid)'
export const UNKNOWN_TYPE = '(unknown)'

interface MessageOutcome {
  /** The message type, or one of the two labels above: never a type a client made up. */
  type: string
  /** 200, or the HTTP status of the error code replied. */
  status: number
  userId: string | null
  /** What a handler attached model usage to (see recordUsage). */
  usageKey?: object
}

/** A message handled, as analytics records it. */
export interface HandledMessage extends MessageOutcome {
  durationMs: number
}

const NOT_AN_OBJECT = 'Message is not a JSON object: send {"type": ..., ...}'

/**
 * Decodes a frame into a message object, or says what is wrong with it; `object` is kept when the
 * frame was an object with a bad `type`, so that the error can still echo its `id`.
 */
function decode(raw: unknown): { message: Record<string, unknown> } | { error: string; object?: Record<string, unknown> } {
  let value = raw
  if (typeof raw === 'string') {
    // Elysia has already parsed frames that start like JSON ({ [ " /). A string that still starts
    // with { or [ is bad JSON, or a JSON string literal it unwrapped: not a message either way.
    // Other strings (JSON after leading white space) are parsed here.
    if (/^[[{]/.test(raw)) return { error: NOT_AN_OBJECT }
    try {
      value = JSON.parse(raw)
    } catch {
      return { error: NOT_AN_OBJECT }
    }
  } else if (raw instanceof Uint8Array || raw instanceof ArrayBuffer || Buffer.isBuffer(raw)) {
    try {
      value = JSON.parse(Buffer.from(raw as Uint8Array).toString('utf8'))
    } catch {
      return { error: NOT_AN_OBJECT }
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'Message must be a JSON object with a "type"' }
  const object = value as Record<string, unknown>
  const tooDeep = findTooDeep(object)
  if (tooDeep !== null) return { error: tooDeepMessage(tooDeep || 'message') }
  if (typeof object.type !== 'string' || !object.type) return { error: 'Message needs a string "type"', object }
  return { message: object }
}

/**
 * The WebSocket channel. `auth` first; then each registered type runs its handler, whose result
 * goes back as `chat_response`. Every reply echoes the message's `id`; errors never close the socket;
 * closing the socket cancels whatever it started.
 */
export function wsModule(
  handlers: SocketHandlers,
  auth: AuthService,
  limiter: RateLimiter,
  log: (line: string) => void = console.error,
  onStorageFull?: () => void,
  onMessage?: (message: HandledMessage) => void,
  onDatabaseLost?: (error: unknown) => void,
) {
  const sockets = new Map<string, SocketState>()
  return new Elysia({ name: 'module:ws', tags: ['WebSocket'] }).ws('/ws', {
    idleTimeout: WS_IDLE_TIMEOUT,
    sendPings: true,
    detail: { summary: 'WebSocket channel: auth, stream_chat, voice_command, plugin_execute, agent_task' },
    open(ws) {
      sockets.set(ws.id, { principal: null, running: new Set() })
    },
    close(ws) {
      const state = sockets.get(ws.id)
      sockets.delete(ws.id)
      state?.stopFeeds?.()
      for (const controller of state?.running ?? []) controller.abort()
    },
    async message(ws, raw) {
      const state = sockets.get(ws.id)
      if (!state) return
      const arrived = performance.now()
      const outcome: MessageOutcome = { type: INVALID_MESSAGE, status: 200, userId: null }
      try {
        const send = (reply: Reply) => {
          if (sockets.has(ws.id)) ws.send(JSON.stringify(reply))
        }
        const result = decode(raw)
        const object = 'message' in result ? result.message : result.object
        // Whatever the client put in `id` comes back on every reply to the message, errors included.
        const withId = (reply: Reply): Reply => (object && 'id' in object ? { ...reply, id: object.id } : reply)
        const fail = (code: string, message: string) => {
          outcome.status = ERROR_STATUS[code as ErrorCode] ?? 500
          send(withId({ type: 'error', code, message }))
        }
        if ('error' in result) return fail('VALIDATION_ERROR', result.error)
        const decoded = result.message
        if (decoded.type === 'auth' || handlers.get(decoded.type as string)) outcome.type = decoded.type as string
        else outcome.type = UNKNOWN_TYPE

        if (decoded.type === 'auth') {
          state.stopFeeds?.()
          state.stopFeeds = undefined
          if (typeof decoded.token !== 'string' || !decoded.token) return fail('VALIDATION_ERROR', 'auth needs a "token" string')
          try {
            const found = auth.authenticate(decoded.token)
            if (found instanceof Promise) {
              let checked!: () => void
              const authenticating = new Promise<void>((resolve) => (checked = resolve))
              state.authenticating = authenticating
              try {
                state.principal = await found
              } catch (error) {
                state.principal = null
                throw error
              } finally {
                if (state.authenticating === authenticating) state.authenticating = undefined
                checked()
              }
            } else state.principal = found
          } catch (error) {
            state.principal = null
            if (databaseUnavailable(error)) {
              onDatabaseLost?.(error)
              return fail('DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE)
            }
            return fail('UNAUTHORIZED', error instanceof AppError ? error.message : 'Invalid token')
          }
          outcome.userId = state.principal.user.id
          send(withId({ type: 'auth_success', userId: state.principal.user.id, sessionId: state.principal.sessionId }))
          state.stopFeeds = handlers.authenticated(state.principal, (message) => send(message as Reply))
          return
        }
        if (state.authenticating) await state.authenticating
        if (!state.principal) return fail('UNAUTHORIZED', 'Send {"type":"auth","token":"<accessToken>"} first')
        outcome.userId = state.principal.user.id
        const type = decoded.type as string
        const handler = handlers.get(type)
        if (!handler) return fail('VALIDATION_ERROR', `Unknown message type "${type}"; known types: ${handlers.types().join(', ')}`)
        let live: boolean
        try {
          const checked = auth.isSessionLive(state.principal.sessionId)
          live = checked instanceof Promise ? await checked : checked
        } catch (error) {
          if (!databaseUnavailable(error)) throw error
          onDatabaseLost?.(error)
          return fail('DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE)
        }
        if (!live) {
          state.principal = null
          state.stopFeeds?.()
          state.stopFeeds = undefined
          return fail('UNAUTHORIZED', 'Session has been revoked; authenticate again')
        }
        const controller = new AbortController()
        state.running.add(controller)
        try {
          // Answers later only when replicas share the limit (Redis).
          const counted = limiter.hit(`user:${state.principal.user.id}`)
          if (counted instanceof Promise) await counted
          const context = { principal: state.principal, signal: controller.signal, send: (reply: Record<string, unknown>) => send(withId(reply as Reply)) }
          outcome.usageKey = context
          const data = await handler(context, decoded)
          if (!controller.signal.aborted) send(withId({ type: 'chat_response', data }))
        } catch (error) {
          if (error instanceof AppError) fail(error.code, error.message)
          else if (unstorableText(error)) fail('VALIDATION_ERROR', UNSTORABLE_TEXT_MESSAGE)
          else if (databaseUnavailable(error)) {
            onDatabaseLost?.(error)
            fail('DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE)
          } else if (storageFull(error)) {
            onStorageFull?.()
            fail('INSUFFICIENT_STORAGE', STORAGE_FULL_MESSAGE)
          } else {
            const requestId = crypto.randomUUID()
            log(`[${requestId}] WebSocket ${type} from user ${state.principal?.user.id ?? '-'} failed: ${(error as Error)?.stack ?? String(error)}`)
            fail('INTERNAL_ERROR', `The request failed (request id ${requestId})`)
          }
        } finally {
          state.running.delete(controller)
        }
      } finally {
        onMessage?.({ ...outcome, durationMs: performance.now() - arrived })
      }
    },
  })
}
