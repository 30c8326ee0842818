import { RedisClient } from 'bun'
import type { SharedCounter } from '../core/rate-limit'
import { redactUrl } from './postgres'

/**
 * The server's link to Redis (UAGENT_REDIS_URL), shared by every replica: rate-limit windows and
 * events. Redis is never needed to answer a request: when it cannot be reached the server says so
 * on /health (`degraded`, naming UAGENT_REDIS_URL), logs it once, and each user of the link falls
 * back to what one replica can do alone until a ping finds Redis again.
 */
/** How long a ping (with its reconnection) may take before Redis counts as lost. */
const PING_TIMEOUT_MS = 2000

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  work.catch(() => {})
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

export class RedisLink implements SharedCounter {
  /** Commands (and PUBLISH). Never queues while disconnected: a command fails at once instead. */
  readonly client: RedisClient
  private subscriberClient: RedisClient | null = null
  private readonly subscriptions = new Map<string, Set<(message: string) => void>>()
  private lost: string | null = null
  private checking = false
  private readonly timer: ReturnType<typeof setInterval>
  private closed = false

  constructor(
    readonly url: string,
    private readonly log: (line: string) => void,
    intervalMs = 1000,
  ) {
    this.client = this.open()
    this.client.onclose = (error) => this.lostWith(error)
    this.timer = setInterval(() => void this.check(), intervalMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  private open(autoReconnect = true): RedisClient {
    return new RedisClient(this.url, { enableOfflineQueue: false, autoReconnect, connectionTimeout: 2000, maxRetries: autoReconnect ? 1_000_000 : 0 })
  }

  /** Null while Redis answers; otherwise why it does not. */
  get problem(): string | null {
    return this.lost
  }

  get healthy(): boolean {
    return this.lost === null
  }

  /** Connects, for a start that waits for Redis briefly; never throws (an unreachable Redis is a degraded server, not a stopped one). */
  async start(): Promise<boolean> {
    return this.check()
  }

  /** A command failed for want of Redis. */
  lostWith(error: unknown): void {
    if (this.closed || this.lost !== null) return
    this.lost = (error as Error)?.message?.replace(/\s+/g, ' ').trim() || String(error) || 'connection closed'
    this.log(`Redis at UAGENT_REDIS_URL (${redactUrl(this.url)}) cannot be reached: ${this.lost}; each replica counts rate limits alone and events stay on the replica that made them until it answers again`)
  }

  /** Pings Redis once (a ping already under way counts); reconnects and resubscribes after a loss. */
  async check(): Promise<boolean> {
    if (this.checking || this.closed) return this.lost === null
    this.checking = true
    try {
      await withTimeout(
        (async () => {
          if (!this.client.connected) await this.client.connect()
          await this.client.send('PING', [])
          if (this.subscriptions.size && !this.subscriberClient?.connected) await this.resubscribe()
        })(),
        PING_TIMEOUT_MS,
      )
      if (this.lost !== null) this.log(`Redis at UAGENT_REDIS_URL answers again`)
      this.lost = null
    } catch (error) {
      this.lostWith(error)
      // A Redis that stopped answering without closing the connection (a network partition) would
      // hold commands sent on it: closing the connection fails them, and the next ping reconnects.
      if ((error as Error).message.startsWith('no answer within')) this.client.close()
    } finally {
      this.checking = false
    }
    return this.lost === null
  }

  /** Listens to a channel, on a connection of its own (a subscribed Redis connection runs no other command). */
  async subscribe(channel: string, handler: (message: string) => void): Promise<void> {
    let handlers = this.subscriptions.get(channel)
    if (!handlers) {
      handlers = new Set()
      this.subscriptions.set(channel, handlers)
    }
    handlers.add(handler)
    try {
      const subscriber = await this.subscriber()
      await subscriber.subscribe(channel, (message) => this.deliver(channel, message))
    } catch (error) {
      // Subscribed again by the next successful ping.
      this.lostWith(error)
    }
  }

  /**
   * Adds one to a rate-limit window's counter (`uagent:rl:<key>`), which expires `ttlMs` after
   * its first count; the window's total so far. Throws when Redis cannot be reached.
   *
   * The count and the expiry are sent together (one round trip, pipelined on the connection):
   * PEXPIRE … NX (Redis 7) sets the expiry only where there is none, so the first count of a
   * window sets it and the others leave it, and a counter never lacks one (a server that died
   * between an INCR and a PEXPIRE sent after it left a key that never expired).
   */
  async incr(key: string, ttlMs: number): Promise<number> {
    const name = `uagent:rl:${key}`
    const [count] = await Promise.all([this.client.send('INCR', [name]), this.client.send('PEXPIRE', [name, String(ttlMs), 'NX'])])
    return Number(count)
  }

  /** Publishes to a channel; false (never a throw) when Redis cannot be reached. */
  async publish(channel: string, message: string): Promise<boolean> {
    if (this.lost !== null || this.closed) return false
    try {
      await this.client.publish(channel, message)
      return true
    } catch (error) {
      this.lostWith(error)
      return false
    }
  }

  private deliver(channel: string, message: string): void {
    for (const handler of this.subscriptions.get(channel) ?? []) {
      try {
        handler(message)
      } catch (error) {
        this.log(`A handler of Redis channel ${channel} failed: ${(error as Error).message}`)
      }
    }
  }

  private connecting: Promise<RedisClient> | null = null

  /** The subscribing connection: one at a time, shared by subscriptions asked for while it connects. */
  private subscriber(): Promise<RedisClient> {
    if (this.subscriberClient?.connected) return Promise.resolve(this.subscriberClient)
    if (this.connecting) return this.connecting
    this.subscriberClient?.close()
    this.subscriberClient = null
    // Never reconnected by itself: a connection that comes back on its own would not be subscribed
    // to anything. Once it closes, the next ping opens a new one and subscribes it again.
    const client = this.open(false)
    client.onclose = (error) => {
      if (this.subscriberClient === client) this.subscriberClient = null
      this.lostWith(error)
    }
    this.connecting = withTimeout(client.connect(), PING_TIMEOUT_MS)
      .then(() => {
        this.subscriberClient = client
        return client
      })
      .catch((error) => {
        client.close()
        throw error
      })
      .finally(() => {
        this.connecting = null
      })
    return this.connecting
  }

  private async resubscribe(): Promise<void> {
    const subscriber = await this.subscriber()
    for (const channel of this.subscriptions.keys()) await subscriber.subscribe(channel, (message) => this.deliver(channel, message))
  }

  close(): void {
    this.closed = true
    clearInterval(this.timer)
    this.client.close()
    this.subscriberClient?.close()
  }
}
