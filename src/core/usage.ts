/** Tokens a model call used, as analytics records them. */
export interface ModelUsage {
  model: string
  promptTokens: number
  completionTokens: number
}

// Keyed by the Request being answered (or, on the WebSocket, by the message's handler context):
// entries go away with the request, and no two apps in one process can see each other's.
const usages = new WeakMap<object, ModelUsage>()

/**
 * Attaches a model call's usage to the request being recorded (`request` is the route's
 * `request`; on the WebSocket, the handler's context). Several calls for one request add up;
 * the model is the last one named.
 */
export function recordUsage(request: object, usage: ModelUsage): void {
  const earlier = usages.get(request)
  usages.set(request, {
    model: usage.model,
    promptTokens: (earlier?.promptTokens ?? 0) + Math.max(0, Math.round(usage.promptTokens) || 0),
    completionTokens: (earlier?.completionTokens ?? 0) + Math.max(0, Math.round(usage.completionTokens) || 0),
  })
}

/** The usage attached to a request, if any. */
export function usageOf(request: object): ModelUsage | undefined {
  return usages.get(request)
}
