import { type Credentials, loadCredentials, saveCredentials } from './credentials'

export const DEFAULT_URL = 'http://127.0.0.1:3000'

/** Exit codes of the contract. */
export const EXIT = { ok: 0, apiError: 1, usage: 2, unreachable: 3 } as const

/** A failure the CLI reports as `error CODE: message` and exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: number,
    /** The HTTP status of an API error. */
    readonly status?: number,
    /** Seconds the server asked to wait (429 Retry-After). */
    readonly retryAfter?: number,
  ) {
    super(message)
  }
}

export interface GlobalOptions {
  url?: string
  token?: string
  json?: boolean
}

const normalize = (url: string) => url.replace(/\/+$/, '')

/**
 * The one HTTP client of the CLI: base URL and token resolution (flag → env → stored login),
 * transparent refresh of an expired access token, and API errors turned into exit codes.
 */
export class ApiClient {
  readonly baseUrl: string
  private token: string | undefined
  private stored: Credentials | null

  constructor(options: GlobalOptions, env: Record<string, string | undefined> = process.env) {
    this.stored = loadCredentials()
    this.baseUrl = normalize(options.url ?? env.UAGENT_URL ?? this.stored?.url ?? DEFAULT_URL)
    this.token = options.token ?? env.UAGENT_TOKEN ?? (this.stored && normalize(this.stored.url) === this.baseUrl ? this.stored.accessToken : undefined)
  }

  /** Whether a token came from the stored login (and so can be refreshed). */
  private get refreshable(): boolean {
    return !!this.stored && this.token === this.stored.accessToken && normalize(this.stored.url) === this.baseUrl
  }

  async fetch(path: string, init: RequestInit = {}, retried = false): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.token && !headers.has('authorization')) headers.set('authorization', `Bearer ${this.token}`)
    // A FormData body sets its own multipart content type (with the boundary).
    if (init.body !== undefined && !(init.body instanceof FormData) && !headers.has('content-type')) headers.set('content-type', 'application/json')
    let response: Response
    try {
      response = await fetch(`${this.baseUrl}${path}`, { ...init, headers })
    } catch (error) {
      throw new CliError('UNREACHABLE', `cannot reach the server at ${this.baseUrl} (${(error as { code?: string }).code ?? (error as Error).message})`, EXIT.unreachable)
    }
    if (response.status === 401 && !retried && this.refreshable) {
      const body = (await response.clone().json().catch(() => null)) as { code?: string } | null
      if (body?.code === 'TOKEN_EXPIRED' && (await this.refresh())) return this.fetch(path, init, true)
    }
    if (!response.ok) throw await apiError(response)
    return response
  }

  /** A JSON request; the parsed body of a 2xx answer. */
  async json<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(path, { method, body: body === undefined ? undefined : JSON.stringify(body) })
    return (await response.json()) as T
  }

  /** Trades the stored refresh token for new tokens and saves them. */
  private async refresh(): Promise<boolean> {
    const stored = this.stored!
    let response: Response
    try {
      response = await fetch(`${this.baseUrl}/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: stored.refreshToken }),
      })
    } catch {
      return false
    }
    if (!response.ok) return false
    const login = (await response.json()) as { accessToken: string; refreshToken: string; sessionId: string }
    this.stored = { ...stored, accessToken: login.accessToken, refreshToken: login.refreshToken, sessionId: login.sessionId, savedAt: new Date().toISOString() }
    saveCredentials(this.stored)
    this.token = login.accessToken
    return true
  }
}

async function apiError(response: Response): Promise<CliError> {
  const text = await response.text().catch(() => '')
  try {
    const body = JSON.parse(text) as { code?: string; message?: string }
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN)
    return new CliError(body.code ?? `HTTP_${response.status}`, body.message ?? response.statusText, EXIT.apiError, response.status, Number.isFinite(retryAfter) ? retryAfter : undefined)
  } catch {
    return new CliError(`HTTP_${response.status}`, text.slice(0, 200) || response.statusText, EXIT.apiError, response.status)
  }
}
