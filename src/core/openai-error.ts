import { AppError, type ErrorCode } from './errors'

/**
 * Errors on the OpenAI-compatible routes (`/v1/…`) travel in OpenAI's shape,
 * `{ error: { message, type, param, code } }`, which the OpenAI client libraries read; every
 * other route keeps the contract's ErrorResponse. Statuses are the same either way.
 */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null }
}

/** Whether a request path is on the OpenAI-compatible surface. */
export function isOpenAiPath(pathname: string): boolean {
  return pathname === '/v1' || pathname.startsWith('/v1/')
}

/** An AppError that also names the request parameter at fault, and OpenAI's code for it. */
export class OpenAiParamError extends AppError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly param: string | null,
    readonly openAiCode: string | null = null,
  ) {
    super(code, message)
  }
}

const TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  405: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
}

/** OpenAI's codes where one exists for ours; otherwise ours, lower-cased. */
const CODES: Partial<Record<string, string>> = {
  UNAUTHORIZED: 'invalid_api_key',
  TOKEN_EXPIRED: 'invalid_api_key',
  RATE_LIMITED: 'rate_limit_exceeded',
  VALIDATION_ERROR: 'invalid_value',
}

/** The OpenAI-shaped body for a failure with this status and contract code. */
export function openAiErrorBody(status: number, code: string, message: string, param: string | null, openAiCode?: string | null): OpenAiErrorBody {
  return {
    error: {
      message,
      type: TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param,
      code: openAiCode ?? CODES[code] ?? code.toLowerCase(),
    },
  }
}
