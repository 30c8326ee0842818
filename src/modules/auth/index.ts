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
import type { RequestAudit } from '../audit/context'
import type { AuthService } from './service'

export function authModule(auth: AuthService, limiter: RateLimiter, audit: RequestAudit) {
  return new Elysia({ name: 'module:auth', prefix: '/auth', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .post('/login', ({ body, headers, request }) => audit.login(request, body.email, 'password', () => auth.login(body.email, body.password, body.mfaCode, headers['user-agent'])), {
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
      async ({ principal, request }) => {
        if (principal.apiKeyId) {
          throw new AppError('VALIDATION_ERROR', 'An API key has no session to log out of: revoke the key with DELETE /auth/api-keys/{id}')
        }
        await auth.revokeSession(principal.sessionId)
        audit.record(request, principal, { action: 'auth.logout', target: principal.user.id, details: { sessionId: principal.sessionId } })
        return { success: true, message: 'Session revoked' }
      },
      { auth: true, response: { 200: SuccessResponse, ...errors }, detail: { summary: 'Revoke the current session' } },
    )
    .post(
      '/password',
      async ({ principal, body, request }) => {
        const sessionsRevoked = await auth.changePassword(principal.user.id, principal.sessionId, body.currentPassword, body.newPassword)
        audit.record(request, principal, { action: 'auth.password_changed', target: principal.user.id, details: { sessionsRevoked } })
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
      async ({ params, body, principal, request }) => {
        const sessionsRevoked = await auth.setPassword(params.id, body.newPassword)
        const user = (await auth.getUser(params.id))!
        audit.record(request, principal, { action: 'user.password_reset', target: params.id, details: { email: user.email, sessionsRevoked } })
        return { success: true, message: 'Password set; every session of the user was signed out', user, sessionsRevoked }
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
      async ({ params, principal, request }) => {
        const cleared = await auth.unlock(params.id)
        const user = (await auth.getUser(params.id))!
        audit.record(request, principal, { action: 'user.unlocked', target: params.id, details: { email: user.email, failuresCleared: cleared } })
        return { success: true, message: `Login throttling cleared (${cleared} recorded failure${cleared === 1 ? '' : 's'})`, user }
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
      async ({ params, principal, request }) => {
        const { user, sessionsRevoked } = await auth.disable(params.id)
        audit.record(request, principal, { action: 'user.disabled', target: params.id, details: { email: user.email, sessionsRevoked } })
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
      async ({ params, principal, request }) => {
        const user = await auth.enable(params.id)
        audit.record(request, principal, { action: 'user.enabled', target: params.id, details: { email: user.email } })
        return { success: true, message: 'User enabled; they can log in again', user }
      },
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: 'Enable a disabled user (admin)' },
      },
    )
    .delete(
      '/users/:id',
      async ({ params, principal, request }) => {
        const user = await auth.deleteUser(params.id)
        audit.record(request, principal, { action: 'user.deleted', target: params.id, details: { email: user.email } })
        return { success: true, message: 'User deleted with everything they owned', user }
      },
      {
        admin: true,
        params: UserParams,
        response: { 200: UserActionResponse, ...adminErrors },
        detail: { summary: 'Delete a user and everything they own: conversations, collections, documents, sessions (admin; not the last admin)' },
      },
    )
    .post(
      '/users',
      async ({ body, principal, request }) => {
        const user = await auth.createUser(body.email, body.password, body.roles ?? ['user'])
        audit.record(request, principal, { action: 'user.created', target: user.id, details: { email: user.email, roles: user.roles } })
        return { success: true, user }
      },
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
      async ({ principal, body, request }) => {
        await auth.enableMfa(principal.user.id, body.code)
        audit.record(request, principal, { action: 'auth.mfa_enabled', target: principal.user.id })
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
      async ({ principal, body, request }) => {
        await auth.disableMfa(principal.user.id, body.code)
        audit.record(request, principal, { action: 'auth.mfa_disabled', target: principal.user.id })
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
