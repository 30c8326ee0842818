import type { Principal } from '../auth/service'

/** What a WebSocket message handler gets: the caller, a signal aborted when the socket closes, a way to send. */
export interface SocketContext {
  principal: Principal
  signal: AbortSignal
  /** Sends a reply to the message being handled (its `id` is added). */
  send(message: Record<string, unknown>): void
}

/**
 * Handles one message type; what it returns is sent as `chat_response { data }`. Throwing an
 * AppError sends `error { code, message }`. Each area registers its own types.
 */
export type SocketHandler = (context: SocketContext, message: Record<string, unknown>) => Promise<unknown>

export class SocketHandlers {
  private readonly handlers = new Map<string, SocketHandler>()

  register(type: string, handler: SocketHandler): this {
    this.handlers.set(type, handler)
    return this
  }

  get(type: string): SocketHandler | undefined {
    return this.handlers.get(type)
  }

  types(): string[] {
    return ['auth', ...this.handlers.keys()]
  }
}
