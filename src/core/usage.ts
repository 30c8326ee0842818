/** Tokens a model call used, as analytics records them. */
export interface ModelUsage {
  model: string
  promptTokens: number
  completionTokens: number
}

// Kept on the Request being answered (or, on the WebSocket, on the message's handler context),
// under a symbol of this module's own: it goes away with the request, no other code can name it,
// and reading it costs a request nothing like a WeakMap lookup.
const USAGE = Symbol('usage')
type WithUsage = { [USAGE]?: ModelUsage }

/**
 * Attaches a model call's usage to the request being recorded (`request` is the route's
 * `request`; on the WebSocket, the handler's context). Several calls for one request add up;
 * the model is the last one named.
 */
export function recordUsage(request: object, usage: ModelUsage): void {
  const target = request as WithUsage
  const earlier = target[USAGE]
  target[USAGE] = {
    model: usage.model,
    promptTokens: (earlier?.promptTokens ?? 0) + Math.max(0, Math.round(usage.promptTokens) || 0),
    completionTokens: (earlier?.completionTokens ?? 0) + Math.max(0, Math.round(usage.completionTokens) || 0),
  }
}

/** The usage attached to a request, if any. */
export function usageOf(request: object): ModelUsage | undefined {
  return (request as WithUsage)[USAGE]
}
