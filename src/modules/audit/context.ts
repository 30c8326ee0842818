import { AppError } from '../../core/errors'
import { requestIdOf } from '../../core/http'
import type { AuditContext, AuditRecorder } from './service'

/** The client's address of a request, as the rate limits see it (proxies considered); null when unknown. */
export type AddressOf = (request: Request) => string | null

type Signed = { user: { id: string; email: string } }

/** The audit context of a request: its caller (null before sign-in), their address and the request id. */
export function auditContextOf(request: Request, caller: Signed | null | undefined, addressOf: AddressOf): AuditContext {
  return {
    actor: caller ? { id: caller.user.id, email: caller.user.email } : null,
    ip: addressOf(request),
    requestId: requestIdOf(request),
  }
}

/** Why a sign-in was refused, as auth.login_failed names it (DIRECTORY_UNAVAILABLE: the LDAP directory was down or refused the service account). */
const LOGIN_FAILURES = new Set(['INVALID_CREDENTIALS', 'MFA_REQUIRED', 'INVALID_MFA_CODE', 'TOO_MANY_ATTEMPTS', 'UNAUTHORIZED', 'FORBIDDEN', 'DIRECTORY_UNAVAILABLE'])

/**
 * What routes record audit events with: the request gives the actor's address and the request id.
 * Recording appends to the audit log's buffer (see AuditLog): it never waits and never throws.
 */
export class RequestAudit {
  constructor(
    readonly log: AuditRecorder,
    private readonly addressOf: AddressOf,
  ) {}

  context(request: Request, caller: Signed | null | undefined): AuditContext {
    return auditContextOf(request, caller, this.addressOf)
  }

  record(request: Request, caller: Signed | null | undefined, event: { action: string; target?: string | null; details?: Record<string, unknown> }): void {
    this.log.record({ ...this.context(request, caller), ...event })
  }

  /**
   * Runs a sign-in and records it: `auth.login` (the user is the actor) or, refused,
   * `auth.login_failed` naming the email tried and the reason (never the password or code).
   */
  async login<T extends Signed>(request: Request, email: string, via: string, run: () => Promise<T>): Promise<T> {
    try {
      const result = await run()
      this.record(request, result, { action: 'auth.login', target: result.user.id, details: { via } })
      return result
    } catch (error) {
      if (error instanceof AppError && LOGIN_FAILURES.has(error.code)) {
        this.record(request, null, { action: 'auth.login_failed', target: email.trim().toLowerCase(), details: { via, reason: error.code } })
      }
      throw error
    }
  }
}
