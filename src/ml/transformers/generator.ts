import { AppError } from '../../core/errors'
import { MAX_REPLY_TOKENS } from '../context-budget'
import type { ChatMessage, GenerateOptions, GenerateResult, Generator } from '../types'
import { PieceQueue } from '../piece-queue'
import { failedWhileRunning, loadOrExplain, locateModel, transformers } from './runtime'
import { tokenStreamer } from './token-streamer'

type Module = Awaited<ReturnType<typeof transformers>>
type Tokenizer = Awaited<ReturnType<Module['AutoTokenizer']['from_pretrained']>>
type CausalLM = Awaited<ReturnType<Module['AutoModelForCausalLM']['from_pretrained']>>

/** What one run reports back: whether a stop sequence ended it, tokens generated, and the limit applied. */
interface Tracker {
  stopped: boolean
  generated?: number
  limit?: number
}

/** A causal language model run by transformers.js, with the tokenizer's chat template and token streaming. */
export class TransformersGenerator implements Generator {
  private constructor(
    readonly id: string,
    readonly contextLength: number,
    private readonly modelsDir: string,
    private readonly module: Module,
    private readonly tokenizer: Tokenizer,
    private readonly model: CausalLM,
  ) {}

  static async load(modelsDir: string, id: string): Promise<TransformersGenerator> {
    const located = locateModel(modelsDir, id)
    return loadOrExplain(id, modelsDir, async () => {
      const module = await transformers(modelsDir)
      const tokenizer = await module.AutoTokenizer.from_pretrained(id)
      const model = await module.AutoModelForCausalLM.from_pretrained(id, { dtype: located.dtype, device: 'cpu' })
      const contextLength = Number(located.config.max_position_embeddings ?? 2048)
      return new TransformersGenerator(id, contextLength, modelsDir, module, tokenizer, model)
    })
  }

  async countTokens(text: string): Promise<number> {
    return this.tokenizer.encode(text, { add_special_tokens: false }).length
  }

  /** The prompt text: the tokenizer's chat template when it has one, else a plain transcript. */
  prompt(messages: ChatMessage[]): string {
    if (this.tokenizer.chat_template) {
      return this.tokenizer.apply_chat_template(messages, { tokenize: false, add_generation_prompt: true }) as string
    }
    return `${messages.map((m) => `${m.role}: ${m.content}`).join('\n')}\nassistant:`
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): Promise<GenerateResult> {
    let text = ''
    const tracker: Tracker = { stopped: false }
    for await (const piece of this.run(messages, options, signal, tracker)) text += piece
    const completionTokens = tracker.generated ?? (await this.countTokens(text))
    const promptTokens = await this.countTokens(this.prompt(messages))
    const limit = tracker.limit ?? options.maxTokens ?? MAX_REPLY_TOKENS
    const finishReason = signal?.aborted ? 'cancelled' : !tracker.stopped && completionTokens >= limit ? 'length' : 'stop'
    return { text, promptTokens, completionTokens, finishReason }
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): AsyncIterable<string> {
    return this.run(messages, options, signal, { stopped: false })
  }

  private async *run(messages: ChatMessage[], options: GenerateOptions, signal: AbortSignal | undefined, tracker: Tracker) {
    const maxTokens = options.maxTokens ?? MAX_REPLY_TOKENS
    // Never truncated: cutting the end would drop the question and the assistant turn marker.
    // The reply gets what the context leaves, and a prompt that leaves nothing is refused.
    const inputs = this.tokenizer(this.prompt(messages), { add_special_tokens: false })
    const promptLength = Number(inputs.input_ids.dims.at(-1))
    const room = this.contextLength - promptLength
    if (room < 1) {
      throw new AppError('VALIDATION_ERROR', `The prompt takes ${promptLength} tokens, but ${this.id} reads at most ${this.contextLength}: shorten it`)
    }
    tracker.limit = Math.min(maxTokens, room)
    const queue = new PieceQueue()
    const interrupt = new this.module.InterruptableStoppingCriteria()
    const onAbort = () => interrupt.interrupt()
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) return
    const stops = (options.stop ?? []).filter(Boolean)
    let produced = ''
    let emitted = 0
    const streamer = tokenStreamer(this.module, this.tokenizer, (piece: string) => {
      if (tracker.stopped) return
      produced += piece
      // Hold back text that could be the start of a stop sequence; cut at a complete one.
      const hit = stops.map((s) => produced.indexOf(s)).filter((i) => i >= 0)
      if (hit.length) {
        tracker.stopped = true
        queue.push(produced.slice(emitted, Math.min(...hit)))
        emitted = produced.length
        interrupt.interrupt()
        return
      }
      const hold = Math.max(0, ...stops.map((s) => s.length - 1))
      const safe = produced.length - hold
      if (safe > emitted) {
        queue.push(produced.slice(emitted, safe))
        emitted = safe
      }
    })
    const temperature = options.temperature ?? 0
    const run = this.model
      .generate({
        ...inputs,
        max_new_tokens: tracker.limit,
        do_sample: temperature > 0,
        ...(temperature > 0 ? { temperature } : {}),
        ...(temperature > 0 && options.topP !== undefined ? { top_p: options.topP } : {}),
        streamer,
        stopping_criteria: [interrupt],
      } as unknown as Parameters<CausalLM['generate']>[0])
      .then(() => {
        tracker.generated = streamer.generated
        if (!tracker.stopped && produced.length > emitted) queue.push(produced.slice(emitted))
        queue.end()
      })
      .catch((error: unknown) => queue.end(failedWhileRunning(this.id, this.modelsDir, error)))
    try {
      for await (const piece of queue) {
        if (signal?.aborted) break
        yield piece
      }
    } finally {
      interrupt.interrupt()
      signal?.removeEventListener('abort', onAbort)
      await run
    }
  }
}
