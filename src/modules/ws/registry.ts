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

/** Events pushed to an authenticated socket unasked (an area's news for its user); returns the function that stops them. */
export type SocketFeed = (principal: Principal, send: (message: Record<string, unknown>) => void) => () => void

export class SocketHandlers {
  private readonly handlers = new Map<string, SocketHandler>()
  private readonly feeds: SocketFeed[] = []

  register(type: string, handler: SocketHandler): this {
    this.handlers.set(type, handler)
    return this
  }

  get(type: string): SocketHandler | undefined {
    return this.handlers.get(type)
  }

  /** Pushes `feed`'s events to each socket from its `auth` on, until it closes or authenticates again. */
  onAuthenticated(feed: SocketFeed): this {
    this.feeds.push(feed)
    return this
  }

  /** Starts every feed for a socket just authenticated; returns the function that stops them. */
  authenticated(principal: Principal, send: (message: Record<string, unknown>) => void): () => void {
    const stops = this.feeds.map((feed) => feed(principal, send))
    return () => {
      for (const stop of stops) stop()
    }
  }

  types(): string[] {
    return ['auth', ...this.handlers.keys()]
  }
}
