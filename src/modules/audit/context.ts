import { requestIdOf } from '../../core/http'
import type { AuditContext } from './service'

/** The client's address of a request, as the rate limits see it (proxies considered); null when unknown. */
export type AddressOf = (request: Request) => string | null

/** The audit context of a request: its caller (null before sign-in), their address and the request id. */
export function auditContextOf(request: Request, caller: { user: { id: string; email: string } } | null | undefined, addressOf: AddressOf): AuditContext {
  return {
    actor: caller ? { id: caller.user.id, email: caller.user.email } : null,
    ip: addressOf(request),
    requestId: requestIdOf(request),
  }
}
