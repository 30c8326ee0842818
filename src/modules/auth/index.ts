import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import { AppError } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import {
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
  SuccessResponse,
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
      ({ principal }) => {
        if (principal.apiKeyId) {
          throw new AppError('VALIDATION_ERROR', 'An API key has no session to log out of: revoke the key with DELETE /auth/api-keys/{id}')
        }
        auth.revokeSession(principal.sessionId)
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
      () => {
        const users = auth.listUsers()
        return { users, total: users.length }
      },
      { admin: true, response: { 200: UsersResponse, ...authErrors }, detail: { summary: 'List every user account (admin)' } },
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
      ({ principal, body }) => {
        auth.enableMfa(principal.user.id, body.code)
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
      ({ principal, body }) => {
        auth.disableMfa(principal.user.id, body.code)
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
