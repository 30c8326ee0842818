import { existsSync } from 'node:fs'
import { AppError } from '../../core/errors'
import { WorkerCalls } from '../../core/worker-calls'
import { type Pcm, floatToInt16, resample } from './pcm'
import type { CommandGrammar } from './recognizer-worker'

export type { CommandGrammar }
export type TranscribeMode = 'commands' | 'dictation'

export const INSTALL_LINE = 'apt-get install -y pocketsphinx pocketsphinx-en-us'
const RATE = 16000
const LIBRARY_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib', '/usr/local/lib']

export interface Transcript {
  text: string
  confidence: number
  duration: number
  mode: TranscribeMode
  words: { word: string; start: number; end: number }[]
}

interface WorkerResult {
  text: string
  words: { word: string; start: number; end: number; probability: number }[]
  score: number
  speechFrames: number
  posterior: number
}

/** Whether libpocketsphinx and its English model are installed. */
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us'

export function recognizerInstalled(modelDir = process.env.UAGENT_SPEECH_MODEL_DIR || DEFAULT_MODEL_DIR): boolean {
  return LIBRARY_DIRS.some((dir) => existsSync(`${dir}/libpocketsphinx.so.3`)) && existsSync(`${modelDir}/en-us/mdef`)
}

/**
 * Speech recognition with pocketsphinx in a worker thread: the worker loads the models once and
 * decodes one utterance at a time, off the server's event loop.
 */
export class Recognizer {
  constructor(readonly modelDir = process.env.UAGENT_SPEECH_MODEL_DIR || DEFAULT_MODEL_DIR) {}

  private readonly calls = new WorkerCalls(new URL('./recognizer-worker.ts', import.meta.url).href)

  private async send<T>(message: Record<string, unknown>, transfer: Transferable[] = []): Promise<T> {
    let reply: { ok: boolean; result?: unknown; error?: string }
    try {
      reply = await this.calls.call(message, transfer)
    } catch (error) {
      throw new AppError('MODEL_UNAVAILABLE', `Speech recognition stopped: ${(error as Error).message}`)
    }
    if (!reply.ok) throw new AppError('MODEL_UNAVAILABLE', `Speech recognition failed: ${reply.error}`)
    return reply.result as T
  }

  /** Loads the command decoder now (start-up), so the first request does not wait for it. */
  async warm(): Promise<void> {
    if (!recognizerInstalled(this.modelDir)) return
    await this.send({ type: 'probe', modelDir: this.modelDir })
  }

  async transcribe(pcm: Pcm, mode: TranscribeMode, grammar?: CommandGrammar): Promise<Transcript> {
    if (!recognizerInstalled(this.modelDir)) {
      throw new AppError('MODEL_UNAVAILABLE', `Speech recognition is not installed on the server: ${INSTALL_LINE}`)
    }
    const duration = pcm.samples.length / pcm.sampleRate
    // A quarter second of silence on each side: the decoder needs some before and after speech.
    const speech = resample(pcm.samples, pcm.sampleRate, RATE)
    const padded = new Float32Array(speech.length + RATE / 2)
    padded.set(speech, RATE / 4)
    const samples = floatToInt16(padded)
    const result = await this.send<WorkerResult>({ samples, mode, modelDir: this.modelDir, grammar: mode === 'commands' ? grammar : undefined }, [samples.buffer])
    const shift = 0.25
    const words = result.words.map((w) => ({ word: w.word, start: round(Math.max(0, w.start - shift)), end: round(Math.max(0, w.end - shift)) }))
    return { text: result.text, confidence: round(confidenceOf(result, mode)), duration: round(duration), mode, words }
  }

  close(): void {
    this.calls.close('the recognizer was closed')
  }
}

const round = (value: number) => Math.round(value * 1000) / 1000

/**
 * Dictation: the decoder's posterior probability of the whole hypothesis. Commands (a grammar has
 * no posterior): the mean per-frame acoustic score of the recognized words, mapped onto 0..1, where
 * about -100 log units per frame (clean speech) gives ~0.9 and noise forced onto the grammar falls away.
 */
function confidenceOf(result: WorkerResult, mode: TranscribeMode): number {
  if (!result.text) return 0
  if (mode === 'dictation') return Number.isFinite(result.posterior) ? Math.max(0, Math.min(1, result.posterior)) : 0
  const perFrame = result.score / Math.max(1, result.speechFrames)
  return Math.max(0, Math.min(1, 1 / (1 + Math.exp((-perFrame - 300) / 90))))
}
