import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { RequestAudit } from '../audit/context'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { ApiKeyParams, ApiKeysResponse, CreateApiKeyRequest, CreatedApiKey, RevokedApiKey } from './model'
import type { ApiKeyService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse }

/** Personal API keys of the caller. Everyone sees and manages their own keys only, admins included. */
export function apiKeysModule(keys: ApiKeyService, auth: AuthService, limiter: RateLimiter, audit: RequestAudit) {
  return new Elysia({ name: 'module:apikeys', prefix: '/auth/api-keys', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .post(
      '',
      async ({ body, principal, request }) => {
        const created = await keys.create(principal.user.id, body.name, body.expiresIn)
        audit.record(request, principal, { action: 'apikey.created', target: created.id, details: { name: created.name, expiresAt: created.expiresAt } })
        return created
      },
      {
      auth: true,
      body: CreateApiKeyRequest,
      response: { 200: CreatedApiKey, ...errors },
      detail: { summary: 'Create a personal API key (uak_…): a Bearer credential for tools; the key is shown once' },
      },
    )
    .get(
      '',
      async ({ principal }) => {
        const list = await keys.list(principal.user.id)
        return { keys: list, total: list.length }
      },
      {
        auth: true,
        response: { 200: ApiKeysResponse, ...errors },
        detail: { summary: 'Your API keys (never the secret), newest first' },
      },
    )
    .delete(
      '/:id',
      async ({ params, principal, request }) => {
        const revoked = await keys.revoke(principal.user.id, params.id)
        audit.record(request, principal, { action: 'apikey.revoked', target: revoked.id, details: { name: revoked.name } })
        return { success: true, id: params.id }
      },
      {
        auth: true,
        params: ApiKeyParams,
        response: { 200: RevokedApiKey, ...errors },
        detail: { summary: 'Revoke (delete) one of your API keys; it stops working at once' },
      },
    )
}
