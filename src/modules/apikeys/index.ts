import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { ApiKeyParams, ApiKeysResponse, CreateApiKeyRequest, CreatedApiKey, RevokedApiKey } from './model'
import type { ApiKeyService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse }

/** Personal API keys of the caller. Everyone sees and manages their own keys only, admins included. */
export function apiKeysModule(keys: ApiKeyService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:apikeys', prefix: '/auth/api-keys', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .post('', ({ body, principal }) => keys.create(principal.user.id, body.name, body.expiresIn), {
      auth: true,
      body: CreateApiKeyRequest,
      response: { 200: CreatedApiKey, ...errors },
      detail: { summary: 'Create a personal API key (uak_…): a Bearer credential for tools; the key is shown once' },
    })
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
      async ({ params, principal }) => {
        await keys.revoke(principal.user.id, params.id)
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
