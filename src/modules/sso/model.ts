import { t } from 'elysia'
import { ErrorResponse } from '../system/model'

export const ProvidersResponse = t.Object({
  password: t.Boolean({ description: 'The email and password form works (local accounts or LDAP)' }),
  oidc: t.Nullable(t.Object({ name: t.String({ description: 'The provider, for "Sign in with <name>"' }), loginUrl: t.String({ description: 'Where the browser goes to sign in' }) })),
  ldap: t.Boolean({ description: 'Passwords of the directory\'s users are checked by LDAP' }),
})

export const OidcLoginQuery = t.Object({
  returnTo: t.Optional(t.String({ maxLength: 512, pattern: '^/app([/?#].*)?$', description: 'A path of the web app to land on once signed in (default /app)' })),
})

export const OidcCallbackQuery = t.Object({
  code: t.Optional(t.String({ maxLength: 4096 })),
  state: t.Optional(t.String({ maxLength: 512 })),
  iss: t.Optional(t.String({ maxLength: 2048 })),
  error: t.Optional(t.String({ maxLength: 256 })),
  error_description: t.Optional(t.String({ maxLength: 2048 })),
  session_state: t.Optional(t.String({ maxLength: 512 })),
})

export const DeviceStartRequest = t.Object({
  clientName: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Shown on the approval page, e.g. "uagent on my-laptop"' })),
})

export const DeviceStartResponse = t.Object({
  deviceCode: t.String({ description: 'Secret: the CLI polls POST /auth/device/token with it' }),
  userCode: t.String({ description: 'What the person checks and approves in the browser, XXXX-XXXX' }),
  verificationUrl: t.String({ description: 'The web app page where the code is approved' }),
  verificationUrlComplete: t.String({ description: 'The same page with the code filled in' }),
  interval: t.Integer({ description: 'Seconds to wait between polls' }),
  expiresIn: t.Integer({ description: 'Seconds the codes stay valid' }),
})

export const DeviceTokenRequest = t.Object({ deviceCode: t.String({ minLength: 1, maxLength: 256 }) })

export const UserCodeParams = t.Object({ userCode: t.String({ minLength: 1, maxLength: 32 }) })

export const DeviceRequestView = t.Object({
  userCode: t.String(),
  status: t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('denied'), t.Literal('used')]),
  clientName: t.Nullable(t.String()),
  createdAt: t.String({ format: 'date-time' }),
  expiresAt: t.String({ format: 'date-time' }),
})

export const DeviceDecisionResponse = t.Object({ success: t.Boolean(), message: t.String(), request: DeviceRequestView })

export const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse }
