/** Error codes of the contract, with the HTTP status each one travels with. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNKNOWN_AGENT: 400,
  UNKNOWN_ACTION: 400,
  UNKNOWN_VOICE: 400,
  PLUGIN_ERROR: 400,
  INSTALL_FAILED: 400,
  AUTHORIZATION_PENDING: 400,
  SLOW_DOWN: 400,
  EXPIRED_TOKEN: 400,
  ACCESS_DENIED: 400,
  UNAUTHORIZED: 401,
  TOKEN_EXPIRED: 401,
  INVALID_CREDENTIALS: 401,
  MFA_REQUIRED: 401,
  INVALID_MFA_CODE: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  AMBIGUOUS_COLLECTION: 409,
  AMBIGUOUS_ASSISTANT: 409,
  PLUGIN_DISABLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  TOO_MANY_ATTEMPTS: 429,
  QUEUE_FULL: 429,
  INTERNAL_ERROR: 500,
  MODEL_UNAVAILABLE: 503,
  BUSY: 503,
  DATABASE_UNAVAILABLE: 503,
  TOOL_UNAVAILABLE: 503,
  DIRECTORY_UNAVAILABLE: 503,
  INSUFFICIENT_STORAGE: 507,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface ErrorBody {
  error: true
  message: string
  code: string
  timestamp: string
  requestId: string
}

/**
 * The one error type services throw for expected failures. The app's onError turns it
 * into the contract's ErrorResponse; `status` defaults to the code's usual status.
 */
export class AppError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly headers: Record<string, string>

  constructor(code: ErrorCode, message: string, options: { status?: number; headers?: Record<string, string> } = {}) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.status = options.status ?? ERROR_STATUS[code]
    this.headers = options.headers ?? {}
  }

  toResponse(requestId: string): ErrorBody {
    return errorBody(this.code, this.message, requestId)
  }
}

export function errorBody(code: string, message: string, requestId: string): ErrorBody {
  return { error: true, message, code, timestamp: new Date().toISOString(), requestId }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`)
export const badRequest = (message: string) => new AppError('VALIDATION_ERROR', message)
