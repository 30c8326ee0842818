import { closeSync, openSync, writeSync } from 'node:fs'
import { AppError } from '../../core/errors'
import { workKind } from '../../core/work-pool'
import { type AudioFormat, createStreamEncoder } from './encoders'
import { DEFAULT_WPM, ESPEAK_RATE, espeak, listVariants, listVoices, MAX_WPM, MIN_WPM, type Voice } from './espeak'
import { timeStretch } from './stretch'

/** Pieces of at most this many characters are synthesized one at a time, so memory stays flat. */
const PIECE_CHARS = 1000

/** Splits text at sentence ends (then commas, then spaces) into pieces of at most `max` characters. */
export function splitForSpeech(text: string, max = PIECE_CHARS): string[] {
  const sentences = text.replace(/\s+/g, ' ').trim().match(/[^.!?;:]+(?:[.!?;:]+|$)/g) ?? []
  const pieces: string[] = []
  let current = ''
  const push = (part: string) => {
    if (current && current.length + part.length + 1 > max) {
      pieces.push(current)
      current = ''
    }
    current = current ? `${current} ${part}` : part
  }
  for (const raw of sentences) {
    let sentence = raw.trim()
    while (sentence.length > max) {
      const cut = Math.max(sentence.lastIndexOf(',', max), sentence.lastIndexOf(' ', max))
      const at = cut > max / 4 ? cut + 1 : max
      push(sentence.slice(0, at).trim())
      sentence = sentence.slice(at).trim()
    }
    if (sentence) push(sentence)
  }
  if (current) pieces.push(current)
  return pieces
}

/**
 * The espeak voice for a request: a voice id (`en-us`, any case) or name, optionally with a
 * `+variant`; `default` picks the voice of `language`. Anything else is 400 UNKNOWN_VOICE.
 */
export function resolveVoice(voice: string, language: string): string {
  const voices = listVoices()
  const [base = '', variant, ...rest] = voice.trim().toLowerCase().split('+')
  const unknown = () =>
    new AppError('UNKNOWN_VOICE', `Unknown voice "${voice}": use an id from GET /voice/voices (e.g. en-us, fr, de), optionally with +variant (e.g. en-us+f2), or "default"`)
  if (rest.length || (variant !== undefined && !listVariants().includes(variant))) throw unknown()
  let found: Voice | undefined
  if (base === 'default' || base === '') {
    const wanted = language.trim().toLowerCase()
    found = voices.find((v) => v.language.toLowerCase() === wanted || v.id === wanted) ?? voices.find((v) => v.language.toLowerCase() === wanted.split('-')[0])
    if (!found) throw new AppError('VALIDATION_ERROR', `language: no voice speaks "${language}"; GET /voice/voices lists the languages`)
  } else {
    found = voices.find((v) => v.id === base || v.name.toLowerCase() === base || v.language.toLowerCase() === base)
  }
  if (!found) throw unknown()
  return variant ? `${found.id}+${variant}` : found.id
}

export interface SynthesisResult {
  samples: number
  sampleRate: number
  bytes: number
}

export interface SynthesisRequest {
  text: string
  /** An espeak voice, as resolveVoice gives it. */
  voice: string
  speed: number
  format: AudioFormat
}

/** synthesizeToFile on the work pool: the worker writes the file at `path`. */
export const SYNTHESIZE = workKind<SynthesisRequest & { path: string }, SynthesisResult>('tts', new URL('./synthesize.work.ts', import.meta.url).href)

/**
 * Speaks `text` into the file at `path` in `format`, piece by piece: each piece is synthesized,
 * stretched when `speed` is beyond espeak's own range, encoded and written before the next starts.
 */
export async function synthesizeToFile(path: string, request: SynthesisRequest): Promise<SynthesisResult> {
  const wpm = DEFAULT_WPM * request.speed
  const engineWpm = Math.min(MAX_WPM, Math.max(MIN_WPM, wpm))
  const stretch = wpm / engineWpm
  const encoder = await createStreamEncoder(request.format, ESPEAK_RATE)
  const fd = openSync(path, 'w', 0o600)
  let bytes = 0
  let samples = 0
  const write = (chunk: Uint8Array) => {
    if (chunk.length) bytes += writeSync(fd, chunk)
  }
  try {
    for (const piece of splitForSpeech(request.text)) {
      const pcm = await espeak(piece, request.voice, engineWpm)
      let floats: Float32Array = new Float32Array(pcm.length)
      for (let i = 0; i < pcm.length; i++) floats[i] = pcm[i]! / 32768
      if (Math.abs(stretch - 1) > 1e-6) floats = timeStretch(floats, stretch, ESPEAK_RATE)
      samples += floats.length
      write(encoder.encode(floats))
      // Other requests run between pieces.
      await new Promise((resolve) => setImmediate(resolve))
    }
    write(encoder.finish())
    if (encoder.header) writeSync(fd, encoder.header(), 0, 44, 0)
  } finally {
    closeSync(fd)
  }
  return { samples, sampleRate: ESPEAK_RATE, bytes }
}
