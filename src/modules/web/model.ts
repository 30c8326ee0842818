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
  'x-requested-with': t.String({ description: 'Must be "uagent-web": a header a cross-site form or image cannot send' }),
})

export const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 429: ErrorResponse }
