import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import { AppError } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import {
  adminErrors,
  authErrors,
  ChangePasswordRequest,
  ChangePasswordResponse,
  CreateUserRequest,
  CreateUserResponse,
  errors,
  LoginRequest,
  LoginResponse,
  MeResponse,
  MfaCodeRequest,
  MfaSetupResponse,
  MfaStateResponse,
  RefreshRequest,
  SetPasswordRequest,
  SuccessResponse,
  UserActionResponse,
  UserParams,
  UsersQuery,
  UsersResponse,
} from './model'
import type { AuthService } from './service'

export function authModule(auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:auth', prefix: '/auth', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .post('/login', ({ body, headers }) => auth.login(body.email, body.password, body.mfaCode, headers['user-agent']), {
      body: LoginRequest,
      response: { 200: LoginResponse, ...errors },
      detail: { summary: 'Log in with email, password and (when enabled) an MFA code', security: [] },
    })
    .post('/refresh', ({ body }) => auth.refresh(body.refreshToken), {
      body: RefreshRequest,
      response: { 200: LoginResponse, ...errors },
      detail: { summary: 'Exchange a refresh token for new tokens (rotation; reuse revokes the session)', security: [] },
    })
    .post(
      '/logout',
      async ({ principal }) => {
        if (principal.apiKeyId) {
          throw new AppError('VALIDATION_ERROR', 'An API key has no session to log out of: revoke the key with DELETE /auth/api-keys/{id}')
        }
        await auth.revokeSession(principal.sessionId)
        return { success: true, message: 'Session revoked' }
      },
      { auth: true, response: { 200: SuccessResponse, ...errors }, detail: { summary: 'Revoke the current session' } },
    )
    .post(
      '/password',
      async ({ principal, body }) => {
        const sessionsRevoked = await auth.changePassword(principal.user.id, principal.sessionId, body.currentPassword, body.newPassword)
        return { success: true, message: 'Password changed; other sessions were signed out and API keys deleted', sessionsRevoked }
      },
      {
        auth: true,
        body: ChangePasswordRequest,
        response: { 200: ChangePasswordResponse, ...authErrors },
        detail: { summary: 'Change your password (needs the current one); signs out your other sessions and deletes your API keys' },
      },
    )
    .get('/me', ({ principal }) => ({ ...principal.user, sessionId: principal.sessionId }), {
      auth: true,
      response: { 200: MeResponse, ...errors },
      detail: { summary: 'The current user' },
    })
    .get(
      '/users',
      async ({ query }) => {
        const limit = query.limit ?? 50
        const offset = query.offset ?? 0
        const { users, total } = await auth.listUsers(limit, offset)
        return { users, total, hasMore: offset + users.length < total }
      },
      {
        admin: true,
        query: UsersQuery,
        response: { 200: UsersResponse, ...authErrors },
        detail: { summary: 'List user accounts, oldest first, a page at a time (admin; no secrets)' },
      },
    )
    .post(
      '/users/:id/password',
      async ({ params, body }) => {
        const sessionsRevoked = await auth.setPassword(params.id, body.newPassword)
        return { success: true, message: 'Password set; every session of the user was signed out', user: (await auth.getUser(params.id))!, sessionsRevoked }
      },
      {
        admin: true,
        params: UserParams,
        body: SetPasswordRequest,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: "Set a user's password (admin); signs out every session of that user" },
      },
    )
    .post(
      '/users/:id/unlock',
      async ({ params }) => {
        const cleared = await auth.unlock(params.id)
        return { success: true, message: `Login throttling cleared (${cleared} recorded failure${cleared === 1 ? '' : 's'})`, user: (await auth.getUser(params.id))! }
      },
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: "Clear a user's login throttling (admin)" },
      },
    )
    .post(
      '/users/:id/disable',
      async ({ params }) => {
        const { user, sessionsRevoked } = await auth.disable(params.id)
        return { success: true, message: 'User disabled; their tokens no longer work', user, sessionsRevoked }
      },
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: 'Disable a user (admin): no logins, every token refused at once; not the last admin' },
      },
    )
    .post(
      '/users/:id/enable',
      async ({ params }) => ({ success: true, message: 'User enabled; they can log in again', user: await auth.enable(params.id) }),
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: 'Enable a disabled user (admin)' },
      },
    )
    .delete(
      '/users/:id',
      async ({ params }) => ({ success: true, message: 'User deleted with everything they owned', user: await auth.deleteUser(params.id) }),
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: 'Delete a user and everything they own: conversations, collections, documents, sessions (admin; not the last admin)' },
      },
    )
    .post(
      '/users',
      async ({ body }) => ({ success: true, user: await auth.createUser(body.email, body.password, body.roles ?? ['user']) }),
      {
        admin: true,
        body: CreateUserRequest,
        response: { 200: CreateUserResponse, ...authErrors },
        detail: { summary: 'Create a user (admin)' },
      },
    )
    .post('/mfa/setup', ({ principal }) => auth.setupMfa(principal.user.id), {
      auth: true,
      response: { 200: MfaSetupResponse, ...authErrors },
      detail: { summary: 'Start TOTP setup: returns a secret and an otpauth:// URL for an authenticator app' },
    })
    .post(
      '/mfa/enable',
      async ({ principal, body }) => {
        await auth.enableMfa(principal.user.id, body.code)
        return { success: true, mfaEnabled: true }
      },
      {
        auth: true,
        body: MfaCodeRequest,
        response: { 200: MfaStateResponse, ...authErrors },
        detail: { summary: 'Confirm TOTP setup with a current code' },
      },
    )
    .post(
      '/mfa/disable',
      async ({ principal, body }) => {
        await auth.disableMfa(principal.user.id, body.code)
        return { success: true, mfaEnabled: false }
      },
      {
        auth: true,
        body: MfaCodeRequest,
        response: { 200: MfaStateResponse, ...authErrors },
        detail: { summary: 'Turn MFA off (needs a current code)' },
      },
    )
}
