import { Elysia } from 'elysia'
import { principalOf } from '../../core/auth'
import { usageOf } from '../../core/usage'
import type { HandledMessage } from '../ws'
import type { RequestRecord, RequestRecorder } from './recorder'
import { pathOf, type RouteTable } from './route-table'

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
 * Records every request: method, route pattern (looked up in `routes`, so a path with ids is never
 * stored, and a path that matches no route gets a fixed label), final status, duration, caller,
 * and the model usage a route attached (recordUsage). The record is queued as a function the
 * recorder runs when it writes the batch, so a request pays for little more than a timestamp.
 * Server-sent event streams are recorded when their stream ends.
 *
 * This wraps the app's fetch handler (Elysia's `wrap`) instead of using lifecycle hooks: an
 * onRequest/mapResponse/onAfterResponse trio changes how Elysia compiles every route and was
 * measured to cost the bearer-authenticated route about a third of its CPU per request; the
 * wrapper costs next to nothing, sees the response exactly as it leaves (404s, 413s and error
 * statuses included) and runs before the caller gets it, so a record is never behind its response.
 */
export function requestRecording(recorder: RequestRecorder, routes: RouteTable, enabled = true) {
  const plugin = new Elysia({ name: 'analytics:recording' })
  if (!enabled) return plugin
  const recordOf = (request: Request, arrived: number, ended: number, status: number) => (): RequestRecord => {
    const usage = usageOf(request)
    return {
      ts: Math.round(Date.now() - (performance.now() - arrived)),
      method: request.method,
      route: routes.resolve(request.method, pathOf(request.url)),
      status,
      durationMs: round2(ended - arrived),
      userId: principalOf(request)?.user.id ?? null,
      promptTokens: usage?.promptTokens ?? 0,
      completionTokens: usage?.completionTokens ?? 0,
      model: usage?.model ?? null,
    }
  }
  const finish = (request: Request, arrived: number, response: unknown): unknown => {
    if (!(response instanceof Response)) {
      // A WebSocket upgrade answers nothing: the connection was handed over (101).
      recorder.record(recordOf(request, arrived, performance.now(), request.headers.get('upgrade') ? 101 : 200))
      return response
    }
    // The header first: reading `body` makes Bun build a stream object for any response.
    if (response.headers.get('content-type')?.startsWith('text/event-stream') && response.body) {
      const end = recorder.begin(() => recordOf(request, arrived, performance.now(), response.status)())
      return new Response(watchEnd(response.body, end), { status: response.status, statusText: response.statusText, headers: response.headers })
    }
    recorder.record(recordOf(request, arrived, performance.now(), response.status))
    return response
  }
  return plugin.wrap(
    (handle) =>
      (request: Request): unknown => {
        const arrived = performance.now()
        let result: unknown
        try {
          result = handle(request)
        } catch (error) {
          recorder.record(recordOf(request, arrived, performance.now(), 500))
          throw error
        }
        if (result instanceof Promise) {
          return result.then(
            (response) => finish(request, arrived, response),
            (error) => {
              recorder.record(recordOf(request, arrived, performance.now(), 500))
              throw error
            },
          )
        }
        return finish(request, arrived, result)
      },
  )
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
