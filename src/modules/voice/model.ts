import { t } from 'elysia'

export const TtsRequest = t.Object({
  text: t.String({ minLength: 1, maxLength: 5000, pattern: '\\S', error: 'body.text: must be 1 to 5000 characters, not blank' }),
  voice: t.String({ minLength: 1, maxLength: 100, description: 'A voice id from GET /voice/voices (optionally +variant, e.g. en-us+f2), or "default" for the voice of `language`' }),
  language: t.String({ minLength: 2, maxLength: 35, pattern: '^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$', error: 'body.language: must be a locale tag such as en-US' }),
  speed: t.Number({ minimum: 0.25, maximum: 4, error: 'body.speed: must be a number from 0.25 to 4' }),
  format: t.Union([t.Literal('mp3'), t.Literal('wav'), t.Literal('ogg')], { error: 'body.format: must be one of mp3, wav, ogg' }),
})

export const TtsResponse = t.Object({
  success: t.Boolean(),
  audioUrl: t.String(),
  duration: t.Number({ description: 'Seconds' }),
  format: t.String(),
  size: t.Integer({ description: 'Bytes' }),
})

export const VoicesResponse = t.Object({ voices: t.Array(t.Object({ id: t.String(), name: t.String(), language: t.String() })) })

const Mode = t.Union([t.Literal('commands'), t.Literal('dictation')], { error: 'body.mode: must be commands or dictation' })
/** Base64 audio in JSON: at most the request size limit; the base64 alphabet only. */
const Base64Audio = t.String({ minLength: 4, maxLength: 20_000_000, pattern: '^[A-Za-z0-9+/=\\s]+$', error: 'body.audio: must be base64-encoded WAV, MP3 or Ogg Vorbis' })

export const TranscribeJson = t.Object({ audio: Base64Audio, mode: t.Optional(Mode) })
export const TranscribeMultipart = t.Object({ audio: t.File({ error: 'body.audio: must be an uploaded audio file' }), mode: t.Optional(Mode) })
export const TranscribeRequest = t.Union([TranscribeJson, TranscribeMultipart], { error: 'body: send {"audio": "<base64>", "mode"?} as JSON, or multipart/form-data with an "audio" file' })

export const TranscribeResponse = t.Object({
  text: t.String(),
  confidence: t.Number({ minimum: 0, maximum: 1 }),
  duration: t.Number({ description: 'Seconds of audio received' }),
  mode: t.String(),
  words: t.Optional(t.Array(t.Object({ word: t.String(), start: t.Number(), end: t.Number() }))),
})

export const VoiceCommandRequest = t.Object({
  command: t.Optional(t.String({ minLength: 1, maxLength: 2000, pattern: '\\S', error: 'body.command: must be 1 to 2000 characters, not blank' })),
  audio: t.Optional(Base64Audio),
  mode: t.Optional(Mode),
  context: t.Optional(t.Nullable(t.String({ maxLength: 10_000 }))),
  userId: t.Optional(t.Nullable(t.String({ maxLength: 100 }))),
})

export const VoiceCommandResponse = t.Object({
  success: t.Boolean(),
  command: t.String(),
  intent: t.String(),
  entities: t.Array(t.String()),
  action: t.String(),
  response: t.String(),
  audioResponse: t.String(),
  confidence: t.Number({ description: "The classifier's probability for the intent" }),
  executed: t.Boolean({ description: 'Whether the autopilot carried the action out' }),
  result: t.Optional(t.Unknown()),
  transcript: t.Optional(t.Object({ text: t.String(), confidence: t.Number(), duration: t.Number(), mode: t.String() })),
})

export const AutopilotRequest = t.Object({
  mode: t.Union([t.Literal('start'), t.Literal('stop'), t.Literal('status')], { error: 'body.mode: must be start, stop or status' }),
  context: t.Optional(t.Nullable(t.String({ maxLength: 10_000 }))),
  preferences: t.Optional(
    t.Object({
      verbosity: t.Optional(t.Union([t.Literal('low'), t.Literal('medium'), t.Literal('high')], { error: 'preferences.verbosity: must be low, medium or high' })),
      autoExecute: t.Optional(t.Boolean()),
      voice: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
      speed: t.Optional(t.Number({ minimum: 0.25, maximum: 4 })),
      timezone: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'IANA zone for "what time is it", e.g. Europe/Paris' })),
    }),
  ),
})

export const AutopilotResponse = t.Object({
  success: t.Boolean(),
  mode: t.String(),
  sessionId: t.String(),
  status: t.String(),
  capabilities: t.Array(t.String()),
  preferences: t.Optional(
    t.Object({ verbosity: t.String(), autoExecute: t.Boolean(), voice: t.String(), speed: t.Number(), timezone: t.Nullable(t.String()) }),
  ),
})

export const AudioParams = t.Object({ file: t.String({ maxLength: 100 }) })
