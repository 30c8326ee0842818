import type { Database } from 'bun:sqlite'
import { AppError } from '../../core/errors'
import { buildCommandGrammar } from '../../ml/speech/command-grammar'
import type { AudioFormat } from '../../ml/speech/encoders'
import { listVoices } from '../../ml/speech/espeak'
import { Recognizer, type Transcript, type TranscribeMode } from '../../ml/speech/recognizer'
import { resolveVoice, SYNTHESIZE } from '../../ml/speech/synthesizer'
import type { WorkPool } from '../../core/work-pool'
import { ensureIntentModel, TRAINING_FILE } from '../../ml/intent/classifier'
import { AudioStore } from './audio-store'
import type { VoiceStore } from './store'
import { SqliteVoiceStore } from './store.sqlite'

/** Audio longer than this is refused before it is decoded further. */
export const MAX_AUDIO_SECONDS = 300

export interface TtsRequest {
  text: string
  voice: string
  language: string
  speed: number
  format: AudioFormat
}

export interface TtsResult {
  success: true
  audioUrl: string
  duration: number
  format: AudioFormat
  size: number
}

export interface SpeechDeps {
  db: Database
  /** Where audio records (and autopilot sessions) are kept (default: the SQLite database `db`). */
  store?: VoiceStore
  audioDir: string
  audioRetentionMs: number
  speechModelDir: string
  /** The names `commands` mode adds to its grammar for this user. */
  grammarNames: (userId: string) => { collections: string[]; plugins: string[]; agents: string[] } | Promise<{ collections: string[]; plugins: string[]; agents: string[] }>
  /** The server's worker pool: synthesis and recognition run there. */
  pool: WorkPool
  recognizer?: Recognizer
}

/** Text to speech, stored audio, and speech recognition. */
export class SpeechService {
  readonly store: VoiceStore
  readonly audio: AudioStore
  readonly recognizer: Recognizer

  constructor(private readonly deps: SpeechDeps) {
    this.store = deps.store ?? new SqliteVoiceStore(deps.db)
    this.audio = new AudioStore(this.store, deps.audioDir, deps.audioRetentionMs)
    this.recognizer = deps.recognizer ?? new Recognizer(deps.pool, deps.speechModelDir)
  }

  /**
   * At start-up, off the request path: makes sure the intent classifier's model is trained and
   * cached (by a child process, once per training data). The classifier and the speech models
   * themselves load on first use: an idle server does not carry them.
   */
  async warm(): Promise<void> {
    await ensureIntentModel()
  }

  voices() {
    return { voices: listVoices() }
  }

  /** Speaks `request.text` on the work pool into a stored file; `signal` (the request's) stops it. */
  async tts(userId: string, request: TtsRequest, signal?: AbortSignal): Promise<TtsResult> {
    if (!/\S/.test(request.text)) throw new AppError('VALIDATION_ERROR', 'text: must not be blank')
    const voice = resolveVoice(request.voice, request.language)
    const { id, path } = this.audio.reserve(request.format)
    try {
      const result = await this.deps.pool.run(SYNTHESIZE, { path, text: request.text, voice, speed: request.speed, format: request.format }, { signal })
      const duration = Math.round((result.samples / result.sampleRate) * 1000) / 1000
      const recorded = this.audio.record({ id, user_id: userId, format: request.format, size: result.bytes, duration })
      if (recorded instanceof Promise) await recorded
      return { success: true, audioUrl: `/voice/audio/${id}.${request.format}`, duration, format: request.format, size: result.bytes }
    } catch (error) {
      this.audio.discard(path)
      throw error
    }
  }

  /**
   * Audio bytes (WAV, MP3, Ogg Vorbis) → text, decoded and recognized on the work pool (unreadable
   * audio is 400). `commands` decodes against this user's command grammar.
   */
  async transcribe(userId: string, bytes: Uint8Array, mode: TranscribeMode, signal?: AbortSignal): Promise<Transcript> {
    const grammar = mode === 'commands' ? await buildCommandGrammar(TRAINING_FILE, await this.deps.grammarNames(userId)) : undefined
    return this.recognizer.transcribeAudio(bytes, mode, grammar, MAX_AUDIO_SECONDS, { signal })
  }

  close(): void {
    this.recognizer.close()
  }
}
