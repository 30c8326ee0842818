import type { Elysia } from 'elysia'

/** A fetch handler of the app: Bun's own for each route it matched, and one general handler. */
export type Handler = (request: Request) => unknown

/**
 * Wraps every fetch handler of the app (Elysia's `wrap`: the request recording, query counting and
 * admission do their work around the handler instead of through lifecycle hooks). Elysia asks for
 * the wrapped handler with every request: it is made once per handler and kept on the handler under
 * a symbol of its own (`name`) — a property read, where a WeakMap lookup was a hash and a probe per
 * request.
 */
export function wrapHandlers<App extends Elysia<any, any, any, any, any, any, any>>(plugin: App, name: string, wrap: (handle: Handler) => Handler): App {
  const WRAPPED = Symbol(name)
  return plugin.wrap((handle: Handler & { [WRAPPED]?: Handler }): Handler => handle[WRAPPED] ?? (handle[WRAPPED] = wrap(handle))) as App
}
