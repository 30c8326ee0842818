import { Elysia, t } from 'elysia'
import { actingUserId, authPlugin } from '../../core/auth'
import { AppError, notFound } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import { CONTENT_TYPES } from '../../ml/speech/encoders'
import { resolveVoice } from '../../ml/speech/synthesizer'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import type { VoiceCommands } from './commands'
import {
  AudioParams,
  AutopilotRequest,
  AutopilotResponse,
  TranscribeRequest,
  TranscribeResponse,
  TtsRequest,
  TtsResponse,
  VoiceCommandRequest,
  VoiceCommandResponse,
  VoicesResponse,
} from './model'
import type { SpeechService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 413: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/** Base64 text → bytes; 400 when it is not base64. */
export function base64Audio(text: string): Uint8Array {
  const clean = text.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) throw new AppError('VALIDATION_ERROR', 'audio: is not valid base64')
  return new Uint8Array(Buffer.from(clean, 'base64'))
}

/** `Range: bytes=a-b` → the byte span to send, null for the whole file, 'invalid' when it cannot be met. */
export function parseRange(header: string | null, size: number): { start: number; end: number } | null | 'invalid' {
  if (!header) return null
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  // Several ranges, or another unit: answered with the whole file, as RFC 9110 allows.
  if (!match || (!match[1] && !match[2])) return null
  if (!match[1]) {
    const suffix = Number(match[2])
    if (suffix === 0) return 'invalid'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(match[1])
  const end = match[2] ? Math.min(Number(match[2]), size - 1) : size - 1
  if (start >= size || (match[2] && Number(match[2]) < start)) return 'invalid'
  return { start, end }
}

function checkTimeZone(zone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
  } catch {
    throw new AppError('VALIDATION_ERROR', `preferences.timezone: unknown time zone "${zone}" (use an IANA name such as Europe/Paris)`)
  }
}

export function voiceModule(speech: SpeechService, commands: VoiceCommands, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:voice', prefix: '/voice', tags: ['Voice'] })
    .use(authPlugin(auth, limiter))
    .get('/voices', () => speech.voices(), {
      auth: true,
      response: { 200: VoicesResponse, ...errors },
      detail: { summary: 'The voices and languages of the speech engine (espeak-ng)' },
    })
    .post('/tts', ({ body, principal, request }) => speech.tts(principal.user.id, body, request.signal), {
      auth: true,
      body: TtsRequest,
      response: { 200: TtsResponse, ...errors },
      detail: { summary: 'Synthesize speech locally; the audio is stored and served at audioUrl to its owner' },
    })
    .get(
      '/audio/:file',
      async ({ params, principal, request }) => {
        const found = await speech.audio.find(principal.user.id, params.file)
        if (!found) throw notFound('Audio')
        const file = Bun.file(found.path)
        const size = file.size
        const headers: Record<string, string> = {
          'content-type': CONTENT_TYPES[found.format],
          'accept-ranges': 'bytes',
          'cache-control': 'private, max-age=3600',
        }
        const range = parseRange(request.headers.get('range'), size)
        if (range === 'invalid') {
          throw new AppError('VALIDATION_ERROR', `Range not satisfiable: the audio has ${size} bytes`, { status: 416, headers: { 'content-range': `bytes */${size}` } })
        }
        if (!range) return new Response(file, { status: 200, headers: { ...headers, 'content-length': String(size) } })
        const length = range.end - range.start + 1
        return new Response(file.slice(range.start, range.end + 1), {
          status: 206,
          headers: { ...headers, 'content-length': String(length), 'content-range': `bytes ${range.start}-${range.end}/${size}` },
        })
      },
      {
        auth: true,
        params: AudioParams,
        response: {
          200: t.Any({ description: 'The audio bytes (audio/mpeg, audio/wav or audio/ogg)' }),
          206: t.Any({ description: 'The requested byte range' }),
          404: ErrorResponse,
          416: ErrorResponse,
          ...errors,
        },
        detail: { summary: 'Stored audio (owner only), with HTTP range requests' },
      },
    )
    .post(
      '/transcribe',
      async ({ body, principal, request }) => {
        const bytes = typeof body.audio === 'string' ? base64Audio(body.audio) : new Uint8Array(await body.audio.arrayBuffer())
        return speech.transcribe(principal.user.id, bytes, body.mode ?? 'commands', request.signal)
      },
      {
        auth: true,
        body: TranscribeRequest,
        response: { 200: TranscribeResponse, ...errors },
        detail: { summary: 'Speech recognition (pocketsphinx): WAV, MP3 or Ogg as base64 JSON or multipart, in commands or dictation mode' },
      },
    )
    .post(
      '/command',
      async ({ body, principal, request }) => {
        if (body.command === undefined && body.audio === undefined) throw new AppError('VALIDATION_ERROR', 'command: required (or audio, base64)')
        const userId = actingUserId(principal, body.userId)
        const target = userId === principal.user.id ? principal.user : await auth.getUser(userId)
        if (!target) throw notFound('User')
        const caller = { userId, roles: target.roles }
        return commands.handle(caller, {
          command: body.audio === undefined ? body.command : undefined,
          audio: body.audio === undefined ? undefined : base64Audio(body.audio),
          mode: body.mode,
          context: body.context,
          signal: request.signal,
        })
      },
      {
        auth: true,
        body: VoiceCommandRequest,
        response: { 200: VoiceCommandResponse, ...errors },
        detail: { summary: 'Understand a command (text or audio): intent, entities, action; the autopilot carries it out' },
      },
    )
    .post(
      '/autopilot',
      ({ body, principal }) => {
        const preferences = body.preferences ?? {}
        if (preferences.voice !== undefined) resolveVoice(preferences.voice, 'en-US')
        if (preferences.timezone !== undefined) checkTimeZone(preferences.timezone)
        return commands.autopilotRequest(principal.user.id, body.mode, body.context, preferences)
      },
      {
        auth: true,
        body: AutopilotRequest,
        response: { 200: AutopilotResponse, ...errors },
        detail: { summary: 'Start, stop or check your voice autopilot session (one per user)' },
      },
    )
}
