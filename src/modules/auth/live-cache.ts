/**
 * How long (ms) a process trusts what it last read of a session ("live?") and of a user (roles,
 * disabled) when the accounts are in PostgreSQL, shared with other replicas. Within it, a request
 * is authenticated without asking PostgreSQL; after it, the next request reads them again. A
 * logout, password change or disabled account on another replica is therefore refused here
 * within this time (the contract's promise is 1 s), with no messages between replicas. This
 * process's own changes drop what it cached at once. On SQLite this process is the only writer:
 * what it read stays true until it changes it, and nothing expires.
 */
export const LIVE_CHECK_MS = 500

/** At most this many entries of each kind; beyond, the cache starts again empty. */
const MAX_ENTRIES = 10_000

/**
 * Callers of live sessions (by session id) and users (by id), each with when it was read.
 * `expiresAfterMs` null: entries never expire (SQLite). A read that started before an
 * invalidation (see `epoch`) must not fill the cache: what it saw may be what was just changed.
 */
export class LiveCache<P extends { user: { id: string } }, U> {
  private readonly principals = new Map<string, { principal: P; at: number }>()
  private readonly users = new Map<string, { user: U | null; at: number }>()
  private invalidations = 0

  constructor(readonly expiresAfterMs: number | null) {}

  /** A time stamp for an entry read from now on (0 when nothing expires: no clock read). */
  now(): number {
    return this.expiresAfterMs === null ? 0 : Date.now()
  }

  /** Counts invalidations: take it before a read, and hand it to remember*. */
  get epoch(): number {
    return this.invalidations
  }

  private fresh(at: number): boolean {
    return this.expiresAfterMs === null || Date.now() - at < this.expiresAfterMs
  }

  /** The cached caller of a session, if it is of `userId` and still fresh. */
  principal(sessionId: string, userId: string): P | undefined {
    const cached = this.principals.get(sessionId)
    return cached && cached.principal.user.id === userId && this.fresh(cached.at) ? cached.principal : undefined
  }

  /** Whether a session was seen live within the time (never on SQLite: it is asked each time, as before). */
  sessionSeenLive(sessionId: string): boolean {
    const cached = this.principals.get(sessionId)
    return this.expiresAfterMs !== null && cached !== undefined && this.fresh(cached.at)
  }

  /** A fresh read of a user (null: read, and not there), or undefined when there is none. */
  user(id: string): { user: U | null } | undefined {
    const cached = this.users.get(id)
    return cached && this.fresh(cached.at) ? cached : undefined
  }

  rememberPrincipal(sessionId: string, principal: P, at: number, epoch: number): void {
    if (epoch !== this.invalidations) return
    if (this.principals.size >= MAX_ENTRIES) this.principals.clear()
    this.principals.set(sessionId, { principal, at })
  }

  rememberUser(id: string, user: U | null, at: number, epoch: number): void {
    if (epoch !== this.invalidations) return
    if (this.users.size >= MAX_ENTRIES) this.users.clear()
    this.users.set(id, { user, at })
  }

  /** Forgets what is cached of a user (their sessions' callers too), or of one session. */
  forget(target: { userId?: string; sessionId?: string }): void {
    this.invalidations++
    if (target.sessionId !== undefined) this.principals.delete(target.sessionId)
    if (target.userId === undefined) return
    this.users.delete(target.userId)
    for (const [sessionId, cached] of this.principals) if (cached.principal.user.id === target.userId) this.principals.delete(sessionId)
  }
}
