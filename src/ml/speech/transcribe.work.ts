// Work module of TRANSCRIBE (recognizer.ts), run in the work pool's workers: decodes and checks the
// audio, resamples it to 16 kHz and recognizes it with pocketsphinx (models loaded once per worker).
import { AppError } from '../../core/errors'
import { decodeAudio } from './decode-audio'
import { AudioFormatError, floatToInt16, type Pcm, resample } from './pcm'
import { decode, decoder } from './pocketsphinx'
import { INSTALL_LINE, recognizerInstalled, type Transcript, type TranscribeMode, type TranscribeTask } from './recognizer'

const RATE = 16000

async function readAudio(audio: Uint8Array, maxSeconds: number): Promise<Pcm> {
  let pcm: Pcm
  try {
    pcm = await decodeAudio(audio)
  } catch (error) {
    if (error instanceof AudioFormatError) throw new AppError('VALIDATION_ERROR', `audio: cannot read it (${error.message})`)
    throw new AppError('VALIDATION_ERROR', 'audio: cannot read it (corrupt or unsupported data)')
  }
  if (!pcm.sampleRate || pcm.sampleRate < 4000 || pcm.sampleRate > 192_000) throw new AppError('VALIDATION_ERROR', `audio: unsupported sample rate ${pcm.sampleRate} Hz`)
  if (pcm.samples.length === 0) throw new AppError('VALIDATION_ERROR', 'audio: holds no samples')
  if (pcm.samples.length / pcm.sampleRate > maxSeconds) throw new AppError('VALIDATION_ERROR', `audio: longer than ${maxSeconds} seconds`)
  return pcm
}

export async function run(task: TranscribeTask): Promise<Transcript | null> {
  if (task.probe) {
    decoder('commands', task.modelDir)
    return null
  }
  const pcm = task.audio ? await readAudio(task.audio, task.maxSeconds ?? Number.POSITIVE_INFINITY) : task.pcm!
  if (!recognizerInstalled(task.modelDir)) throw new AppError('MODEL_UNAVAILABLE', `Speech recognition is not installed on the server: ${INSTALL_LINE}`)
  const duration = pcm.samples.length / pcm.sampleRate
  // A quarter second of silence on each side: the decoder needs some before and after speech.
  const speech = resample(pcm.samples, pcm.sampleRate, RATE)
  const padded = new Float32Array(speech.length + RATE / 2)
  padded.set(speech, RATE / 4)
  let result: ReturnType<typeof decode>
  try {
    result = decode({ samples: floatToInt16(padded), mode: task.mode, modelDir: task.modelDir, grammar: task.mode === 'commands' ? task.grammar : undefined })
  } catch (error) {
    throw new AppError('MODEL_UNAVAILABLE', `Speech recognition failed: ${(error as Error).message}`)
  }
  const shift = 0.25
  const words = result.words.map((w) => ({ word: w.word, start: round(Math.max(0, w.start - shift)), end: round(Math.max(0, w.end - shift)) }))
  return { text: result.text, confidence: round(confidenceOf(result, task.mode)), duration: round(duration), mode: task.mode, words }
}

const round = (value: number) => Math.round(value * 1000) / 1000

/**
 * Dictation: the decoder's posterior probability of the whole hypothesis. Commands (a grammar has
 * no posterior): the mean per-frame acoustic score of the recognized words, mapped onto 0..1, where
 * about -100 log units per frame (clean speech) gives ~0.9 and noise forced onto the grammar falls away.
 */
function confidenceOf(result: ReturnType<typeof decode>, mode: TranscribeMode): number {
  if (!result.text) return 0
  if (mode === 'dictation') return Number.isFinite(result.posterior) ? Math.max(0, Math.min(1, result.posterior)) : 0
  const perFrame = result.score / Math.max(1, result.speechFrames)
  return Math.max(0, Math.min(1, 1 / (1 + Math.exp((-perFrame - 300) / 90))))
}
