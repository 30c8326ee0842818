import type { RedisLink } from '../db/redis'

export type BusHandler = (event: Record<string, unknown>) => void

/**
 * Events a part of the server waits for (an agent task's progress, a cancel, a task queued),
 * whichever replica made them. `publish` never throws and always reaches this replica's
 * subscribers; with Redis it reaches the other replicas' too, while Redis answers.
 */
export interface EventBus {
  /** Delivers `event` to every subscriber of `topic`, here at once and on the other replicas. */
  publish(topic: string, event: Record<string, unknown>): void
  /** Calls `handler` with every event of `topic`; the function returned stops it. */
  subscribe(topic: string, handler: BusHandler): () => void
  /** Whether events reach the other replicas right now (false: this replica alone, or Redis lost). */
  readonly shared: boolean
  close(): void
}

/** One process: events go to this process's subscribers only. */
export class LocalBus implements EventBus {
  private readonly topics = new Map<string, Set<BusHandler>>()

  constructor(protected readonly log: (line: string) => void = (line) => console.error(line)) {}

  get shared(): boolean {
    return false
  }

  publish(topic: string, event: Record<string, unknown>): void {
    this.deliver(topic, event)
  }

  subscribe(topic: string, handler: BusHandler): () => void {
    let handlers = this.topics.get(topic)
    if (!handlers) {
      handlers = new Set()
      this.topics.set(topic, handlers)
      this.firstSubscriber(topic)
    }
    handlers.add(handler)
    return () => {
      handlers.delete(handler)
    }
  }

  protected firstSubscriber(_topic: string): void {}

  /** Calls each handler of the topic; a handler that throws is logged and the others still run. */
  protected deliver(topic: string, event: Record<string, unknown>): void {
    const handlers = this.topics.get(topic)
    if (!handlers?.size) return
    for (const handler of [...handlers]) {
      try {
        handler(event)
      } catch (error) {
        this.log(`bus: a handler of ${topic} failed: ${(error as Error)?.message ?? String(error)}`)
      }
    }
  }

  close(): void {
    this.topics.clear()
  }
}

/** The Redis channel of a topic. */
export const busChannel = (topic: string) => `uagent:bus:${topic}`

/**
 * Every replica: events go to this process's subscribers at once, and through Redis pub/sub
 * (UAGENT_REDIS_URL) to the other replicas'. An event is delivered once per process: the copy
 * Redis sends back to its publisher is recognised by its origin and dropped. When Redis cannot be
 * reached, publishing still reaches this replica (and nothing throws); the RedisLink subscribes
 * again once Redis answers.
 */
export class RedisBus extends LocalBus {
  /** This bus's own id (not the instance id: several servers may share a process in tests). */
  private readonly origin = crypto.randomUUID()
  private closed = false

  constructor(
    private readonly link: RedisLink,
    log: (line: string) => void = (line) => console.error(line),
  ) {
    super(log)
  }

  override get shared(): boolean {
    return !this.closed && this.link.healthy
  }

  override publish(topic: string, event: Record<string, unknown>): void {
    this.deliver(topic, event)
    if (this.closed) return
    let message: string
    try {
      message = JSON.stringify({ origin: this.origin, event })
    } catch (error) {
      this.log(`bus: an event of ${topic} cannot be sent to other replicas: ${(error as Error).message}`)
      return
    }
    this.link.publish(busChannel(topic), message).catch(() => false)
  }

  protected override firstSubscriber(topic: string): void {
    void this.link
      .subscribe(busChannel(topic), (message) => {
        if (this.closed) return
        let parsed: { origin?: unknown; event?: unknown }
        try {
          parsed = JSON.parse(message)
        } catch {
          return this.log(`bus: an unreadable message on ${busChannel(topic)} was ignored`)
        }
        if (parsed.origin === this.origin || typeof parsed.event !== 'object' || parsed.event === null) return
        this.deliver(topic, parsed.event as Record<string, unknown>)
      })
      .catch((error) => this.log(`bus: subscribing to ${topic} failed: ${(error as Error)?.message ?? String(error)}`))
  }

  override close(): void {
    this.closed = true
    super.close()
  }
}
