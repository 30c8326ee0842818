import { t } from 'elysia'
import { ErrorResponse } from '../system/model'

export const WebLoginRequest = t.Object({
  email: t.String({ format: 'email', maxLength: 320 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
  mfaCode: t.Optional(t.Nullable(t.String({ maxLength: 16 }))),
})

/** As LoginResponse, without the refresh token: that one travels in the HttpOnly cookie only. */
export const WebSessionResponse = t.Object({
  success: t.Boolean(),
  accessToken: t.String(),
  sessionId: t.String(),
  expiresIn: t.Integer({ description: 'Access token lifetime in seconds' }),
  user: t.Object({ id: t.String(), email: t.String(), roles: t.Array(t.String()), mfaEnabled: t.Boolean() }),
})

export const WebLogoutResponse = t.Object({ success: t.Boolean(), message: t.String() })

export const CsrfHeaders = t.Object({
  // Optional in the schema so that a request without it is told 403 (not a 400 about a header).
  'x-requested-with': t.Optional(t.String({ description: 'Required, "uagent-web": a header a cross-site form or image cannot send (403 without it)' })),
})

export const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 429: ErrorResponse }
