import { Elysia } from 'elysia'
import { type Handler, wrapHandlers } from '../../core/wrap-handlers'
import { principalOf } from '../../core/auth'
import { claimEventStream, unclaimedEventStreams } from '../../core/sse'
import { usageOf } from '../../core/usage'
import type { HandledMessage } from '../ws'
import { type RequestRecorder, UNMATCHED } from './recorder'
import type { RouteTable } from './route-table'

/** A copy of `body` that calls `end` once, when it has been read to the end or cancelled. */
function watchEnd(body: ReadableStream<Uint8Array>, end: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read()
        if (done) {
          controller.close()
          end()
        } else controller.enqueue(value)
      } catch (error) {
        end()
        controller.error(error)
      }
    },
    cancel(reason) {
      end()
      return reader.cancel(reason)
    },
  })
}

const round2 = (value: number) => Math.round(value * 100) / 100

/**
 * Records every request: method, route pattern (so a path with ids is never stored, and a path
 * that matches no route gets a fixed label), final status, duration, caller, and the model usage
 * a route attached (recordUsage). The record is written straight into the recorder's batch as
 * numbers (no record object per request, and the request itself is not kept). Server-sent
 * event streams are recorded when their stream ends. The recorder also counts the requests being
 * answered, so that a server stopping can wait for their records.
 *
 * This wraps the app's fetch handler (Elysia's `wrap`) instead of using lifecycle hooks: an
 * onRequest/mapResponse/onAfterResponse trio changes how Elysia compiles every route and was
 * measured to cost the bearer-authenticated route about a third of its CPU per request; the
 * wrapper sees the response exactly as it leaves (404s, 413s and error statuses included) and
 * runs before the caller gets it, so a record is never behind its response.
 *
 * Elysia hands the wrapper the handler a request reached: under Bun.serve, each route Bun's own
 * router matched has a handler of its own, and every other request (no match, wildcard and
 * WebSocket routes, app.handle()) goes through one general handler. The wrapped handler is made
 * once per handler, and one of a Bun route learns its pattern from its first request: the
 * pattern then costs a request nothing, where looking it up in `routes` (the request's URL, its
 * path cut out and hashed) was a third of what recording cost a request. A request that Bun's
 * router matched is one that carries `params`; the general handler's requests are looked up by
 * path every time (resolveUrl remembers frequent paths).
 */
export function requestRecording(recorder: RequestRecorder, routes: RouteTable, enabled = true) {
  const plugin = new Elysia({ name: 'analytics:recording' })
  if (!enabled) return plugin
  const record = (request: Request, route: string, arrived: number, status: number): void => {
    const durationMs = performance.now() - arrived
    const usage = usageOf(request)
    recorder.add(
      Math.round(recorder.epoch + arrived),
      request.method,
      route,
      status,
      round2(durationMs),
      principalOf(request)?.user.id ?? null,
      usage?.promptTokens ?? 0,
      usage?.completionTokens ?? 0,
      usage?.model ?? null,
    )
  }
  const wrap = (handle: Handler): Handler => {
    /** The pattern of the one route this handler answers, once a request has shown it is one. */
    let pattern: string | undefined
    const routeOf = (request: Request): string => {
      if (pattern !== undefined) return pattern
      const route = routes.resolveUrl(request.method, request.url)
      // (Wildcard routes and unmatched paths never have a Bun route of their own.)
      if ('params' in request && route !== UNMATCHED && !route.endsWith('*')) pattern = route
      return route
    }
    /** Records a request that ended without a response (it threw): a 500. */
    const failed = (request: Request, arrived: number): void => {
      record(request, routeOf(request), arrived, 500)
      recorder.leave()
    }
    const finish = (request: Request, arrived: number, response: unknown): unknown => {
      if (!(response instanceof Response)) {
        // A WebSocket upgrade answers nothing: the connection was handed over (101).
        record(request, routeOf(request), arrived, request.headers.get('upgrade') ? 101 : 200)
      } else if (unclaimedEventStreams() > 0 && response.headers.get('content-type')?.startsWith('text/event-stream') && response.body) {
        // Headers are read only while an event stream is on its way (reading them costs every
        // response a Headers object), and before `body` (which makes Bun build a stream object).
        claimEventStream(response.body)
        const status = response.status
        const route = routeOf(request)
        const end = recorder.begin(() => record(request, route, arrived, status))
        response = new Response(watchEnd(response.body, end), { status, statusText: response.statusText, headers: response.headers })
      } else record(request, routeOf(request), arrived, response.status)
      recorder.leave()
      return response
    }
    return (request: Request): unknown => {
      const arrived = performance.now()
      recorder.arrive()
      let result: unknown
      try {
        result = handle(request)
      } catch (error) {
        failed(request, arrived)
        throw error
      }
      if (result instanceof Promise) {
        // Most async handlers finish without waiting on anything (every authenticated GET does): their
        // promise is fulfilled when it is returned. Its response is then taken at once (Bun.peek) and
        // handed to Bun as it is, where chaining a callback made a new promise, pending until the next
        // microtask, for Bun to wait on.
        if (Bun.peek.status(result) === 'fulfilled') return finish(request, arrived, Bun.peek(result))
        return result.then(
          (response) => finish(request, arrived, response),
          (error) => {
            failed(request, arrived)
            throw error
          },
        )
      }
      return finish(request, arrived, result)
    }
  }
  return wrapHandlers(plugin, 'recorded', wrap)
}

/** Records a WebSocket message as method `WS`, route its type (`WS stream_chat`). */
export function recordSocketMessage(recorder: RequestRecorder, message: HandledMessage): void {
  const usage = message.usageKey ? usageOf(message.usageKey) : undefined
  recorder.record({
    ts: Math.round(Date.now() - message.durationMs),
    method: 'WS',
    route: message.type,
    status: message.status,
    durationMs: round2(message.durationMs),
    userId: message.userId,
    promptTokens: usage?.promptTokens ?? 0,
    completionTokens: usage?.completionTokens ?? 0,
    model: usage?.model ?? null,
  })
}
