export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

export interface GenerateOptions {
  maxTokens?: number
  temperature?: number
  /** Nucleus sampling: only tokens within this probability mass are drawn (when sampling). */
  topP?: number
  stop?: string[]
}

export interface GenerateResult {
  text: string
  promptTokens: number
  completionTokens: number
  finishReason: 'stop' | 'length' | 'cancelled'
  /** Set by engines that can tell that the sources they were given hold no answer. */
  noAnswer?: boolean
}

/** How an embedding call is run. */
export interface EmbedOptions {
  /**
   * The request's signal: once it aborts, an embedder that runs on the work pool takes its task
   * out of the queue (or stops its worker) and rejects with an AbortError; one that runs here stops
   * between its batches.
   */
  signal?: AbortSignal
  /** Background work (an ingestion job): it waits for a worker however long the queue is, instead of 503 BUSY. */
  background?: boolean
}

/** Turns texts into vectors of `dimensions` floats, in batches. */
export interface Embedder {
  readonly id: string
  readonly dimensions: number
  /** Longest input the model reads, in tokens (chunk sizes follow it); unset for engines without a limit. */
  readonly maxTokens?: number
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>
  /**
   * Set when `embed` runs off this thread (a worker): a caller may hand it a whole batch at once and
   * do other work meanwhile, with no need to slice it and yield between slices.
   */
  readonly offThread?: boolean
  /** Tokens the model reads of `text`, where the engine has a tokenizer. */
  countTokens?(text: string): Promise<number>
}

/** Produces chat replies, whole or as a stream of text pieces. */
export interface Generator {
  readonly id: string
  readonly contextLength: number
  countTokens(text: string): Promise<number>
  generate(messages: ChatMessage[], options?: GenerateOptions, signal?: AbortSignal): Promise<GenerateResult>
  stream(messages: ChatMessage[], options?: GenerateOptions, signal?: AbortSignal): AsyncIterable<string>
}
