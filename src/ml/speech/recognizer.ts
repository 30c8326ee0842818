import { existsSync } from 'node:fs'
import { AppError } from '../../core/errors'
import { type RunOptions, type WorkPool, workKind } from '../../core/work-pool'
import type { Pcm } from './pcm'
import type { CommandGrammar } from './pocketsphinx'

export type { CommandGrammar }
export type TranscribeMode = 'commands' | 'dictation'

export const INSTALL_LINE = 'apt-get install -y pocketsphinx pocketsphinx-en-us'
const LIBRARY_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib', '/usr/local/lib']

export interface Transcript {
  text: string
  confidence: number
  duration: number
  mode: TranscribeMode
  words: { word: string; start: number; end: number }[]
}

/** Whether libpocketsphinx and its English model are installed. */
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us'

export function recognizerInstalled(modelDir = process.env.UAGENT_SPEECH_MODEL_DIR || DEFAULT_MODEL_DIR): boolean {
  return LIBRARY_DIRS.some((dir) => existsSync(`${dir}/libpocketsphinx.so.3`)) && existsSync(`${modelDir}/en-us/mdef`)
}

/** What a transcription task gets: encoded audio (decoded in the worker) or samples, and the decoder to use. */
export interface TranscribeTask {
  /** WAV, MP3 or Ogg bytes, decoded and checked in the worker (400 VALIDATION_ERROR when unreadable). */
  audio?: Uint8Array
  pcm?: Pcm
  /** Longer audio is refused (400) before it is decoded further. */
  maxSeconds?: number
  mode: TranscribeMode
  modelDir: string
  grammar?: CommandGrammar
  /** Only loads the command decoder. */
  probe?: boolean
}

export const TRANSCRIBE = workKind<TranscribeTask, Transcript | null>('transcribe', new URL('./transcribe.work.ts', import.meta.url).href)

/**
 * Speech recognition with pocketsphinx, on the work pool: each worker loads the models once, and
 * decoding the audio, resampling and recognizing all run there, off the server's event loop.
 */
export class Recognizer {
  constructor(
    private readonly pool: WorkPool,
    readonly modelDir = process.env.UAGENT_SPEECH_MODEL_DIR || DEFAULT_MODEL_DIR,
  ) {}

  /** Loads the command decoder in a worker now, so the first request does not wait for it. */
  async warm(): Promise<void> {
    if (!recognizerInstalled(this.modelDir)) return
    await this.pool.run(TRANSCRIBE, { mode: 'commands', modelDir: this.modelDir, probe: true })
  }

  /** Samples → text. */
  async transcribe(pcm: Pcm, mode: TranscribeMode, grammar?: CommandGrammar, options: RunOptions = {}): Promise<Transcript> {
    this.assertInstalled()
    return (await this.pool.run(TRANSCRIBE, { pcm, mode, modelDir: this.modelDir, grammar: mode === 'commands' ? grammar : undefined }, options))!
  }

  /** Audio bytes (WAV, MP3, Ogg Vorbis) → text; unreadable audio is 400 VALIDATION_ERROR. */
  async transcribeAudio(audio: Uint8Array, mode: TranscribeMode, grammar: CommandGrammar | undefined, maxSeconds: number, options: RunOptions = {}): Promise<Transcript> {
    const task: TranscribeTask = { audio, maxSeconds, mode, modelDir: this.modelDir, grammar: mode === 'commands' ? grammar : undefined }
    return (await this.pool.run(TRANSCRIBE, task, options))!
  }

  private assertInstalled(): void {
    if (!recognizerInstalled(this.modelDir)) {
      throw new AppError('MODEL_UNAVAILABLE', `Speech recognition is not installed on the server: ${INSTALL_LINE}`)
    }
  }

  /** The pool's workers are the server's; nothing of the recognizer's own to stop. */
  close(): void {}
}
