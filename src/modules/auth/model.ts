import { t } from 'elysia'
import { ErrorResponse } from '../system/model'

const UserView = t.Object({
  id: t.String(),
  email: t.String(),
  roles: t.Array(t.String()),
  mfaEnabled: t.Boolean(),
})

export const LoginRequest = t.Object({
  email: t.String({ format: 'email', maxLength: 320 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
  mfaCode: t.Optional(t.Nullable(t.String({ maxLength: 16 }))),
})

export const LoginResponse = t.Object({
  success: t.Boolean(),
  accessToken: t.String(),
  refreshToken: t.String(),
  sessionId: t.String(),
  expiresIn: t.Integer({ description: 'Access token lifetime in seconds' }),
  user: UserView,
})

export const RefreshRequest = t.Object({ refreshToken: t.String({ minLength: 1, maxLength: 512 }) })

export const MeResponse = t.Object({
  id: t.String(),
  email: t.String(),
  roles: t.Array(t.String()),
  mfaEnabled: t.Boolean(),
  createdAt: t.String({ format: 'date-time' }),
  sessionId: t.String(),
})

export const CreateUserRequest = t.Object({
  email: t.String({ format: 'email', maxLength: 320 }),
  password: t.String({ minLength: 8, maxLength: 1024 }),
  roles: t.Optional(t.Array(t.Union([t.Literal('admin'), t.Literal('user')]), { maxItems: 2 })),
})

const Account = t.Object({
  id: t.String(),
  email: t.String(),
  roles: t.Array(t.String()),
  mfaEnabled: t.Boolean(),
  createdAt: t.String({ format: 'date-time' }),
  disabled: t.Boolean({ description: 'Disabled by an admin: cannot log in, tokens refused' }),
})

export const CreateUserResponse = t.Object({ success: t.Boolean(), user: Account })

export const UsersQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
})

export const UsersResponse = t.Object({ users: t.Array(Account), total: t.Integer(), hasMore: t.Boolean() })

export const UserParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }) })

export const SetPasswordRequest = t.Object({ newPassword: t.String({ minLength: 8, maxLength: 1024 }) })

export const UserActionResponse = t.Object({
  success: t.Boolean(),
  message: t.String(),
  user: Account,
  sessionsRevoked: t.Optional(t.Integer({ description: 'Sessions of the user that were signed out' })),
})

export const ChangePasswordRequest = t.Object({
  currentPassword: t.String({ minLength: 1, maxLength: 1024 }),
  newPassword: t.String({ minLength: 8, maxLength: 1024 }),
})

export const ChangePasswordResponse = t.Object({
  success: t.Boolean(),
  message: t.String(),
  sessionsRevoked: t.Integer({ description: 'Other sessions of the account that were signed out' }),
})

export const MfaSetupResponse = t.Object({ secret: t.String(), otpauthUrl: t.String() })
export const MfaCodeRequest = t.Object({ code: t.String({ minLength: 1, maxLength: 16 }) })
export const MfaStateResponse = t.Object({ success: t.Boolean(), mfaEnabled: t.Boolean() })
export const SuccessResponse = t.Object({ success: t.Boolean(), message: t.String() })

export const errors = { 400: ErrorResponse, 401: ErrorResponse, 429: ErrorResponse }
export const authErrors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse }
export const adminErrors = { ...authErrors, 404: ErrorResponse }
