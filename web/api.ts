import { signal } from '@preact/signals'

export interface User {
  id: string
  email: string
  roles: string[]
  mfaEnabled: boolean
}

interface Session {
  accessToken: string
  expiresIn: number
  user: User
}

/** The signed-in user; the access token stays in this module's memory, never in storage. */
export const currentUser = signal<User | null>(null)
let accessToken: string | null = null
let refreshTimer: ReturnType<typeof setTimeout> | undefined

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message)
  }
}

const CSRF = { 'x-requested-with': 'uagent-web' }
const HINT = 'uagent_signed_in'

async function failure(response: Response): Promise<ApiError> {
  let body: { message?: string; code?: string } = {}
  try {
    body = await response.json()
  } catch {}
  return new ApiError(body.message ?? `${response.status} ${response.statusText}`, body.code ?? 'HTTP_ERROR', response.status)
}

function adopt(session: Session): void {
  accessToken = session.accessToken
  currentUser.value = session.user
  clearTimeout(refreshTimer)
  // Renewed a minute before the access token expires, silently.
  refreshTimer = setTimeout(() => void refresh(), Math.max(10, session.expiresIn - 60) * 1000)
}

function forget(): void {
  accessToken = null
  clearTimeout(refreshTimer)
  document.cookie = `${HINT}=; Path=/; Max-Age=0; SameSite=Strict`
  currentUser.value = null
}

async function sessionCall(path: string, body?: unknown): Promise<Session> {
  const response = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: body === undefined ? CSRF : { ...CSRF, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!response.ok) throw await failure(response)
  return response.json()
}

export async function signIn(email: string, password: string, mfaCode?: string): Promise<void> {
  adopt(await sessionCall('/auth/web/login', { email, password, ...(mfaCode ? { mfaCode } : {}) }))
}

/**
 * Refresh tokens rotate, and presenting a spent one revokes the session: two tabs refreshing at
 * once with the same cookie would sign both out. A lock shared by the tabs (Web Locks; secure
 * contexts only) makes the second wait and send the cookie the first one received.
 */
function oneTabAtATime<T>(work: () => Promise<T>): Promise<T> {
  return navigator.locks ? navigator.locks.request('uagent-refresh', work) : work()
}

let refreshing: Promise<boolean> | null = null
/** A new access token from the HttpOnly session cookie; false (signed out) when there is none. */
export function refresh(): Promise<boolean> {
  refreshing ??= oneTabAtATime(() => sessionCall('/auth/web/refresh'))
    .then((session) => {
      adopt(session)
      return true
    })
    .catch(() => {
      forget()
      return false
    })
    .finally(() => {
      refreshing = null
    })
  return refreshing
}

/** At load: resumes the session when the page was signed in (the hint cookie says a session cookie exists). */
export async function resume(): Promise<void> {
  if (document.cookie.split('; ').some((part) => part === `${HINT}=1`)) await refresh()
}

export async function signOut(): Promise<void> {
  try {
    await request('/auth/web/logout', { method: 'POST' })
  } finally {
    forget()
  }
}

/** A fetch with the access token; an expired token is refreshed once and the request repeated. */
export async function request(path: string, init: RequestInit = {}, retried = false): Promise<Response> {
  const headers = new Headers(init.headers)
  if (accessToken) headers.set('authorization', `Bearer ${accessToken}`)
  const response = await fetch(path, { ...init, headers, credentials: 'same-origin' })
  if (!response.ok) {
    const error = await failure(response)
    // Only a refused token is renewed and the request repeated (not a wrong password, say).
    const tokenRefused = error.code === 'TOKEN_EXPIRED' || error.code === 'UNAUTHORIZED'
    if (response.status === 401 && tokenRefused && !retried && accessToken && (await refresh())) return request(path, init, true)
    throw error
  }
  return response
}

/** JSON in, JSON out. */
export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const response = await request(path, {
    method,
    signal,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return response.json()
}

/** The bearer token for transports that need it in hand (XHR uploads). */
export function bearer(): string | null {
  return accessToken
}

/** Message of any thrown value, in words. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  return String(error)
}

export const isAdmin = () => currentUser.value?.roles.includes('admin') ?? false

/** Saves a Blob under a file name (an object URL clicked by a temporary link). */
export function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
