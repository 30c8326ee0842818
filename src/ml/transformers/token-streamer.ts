import type { transformers } from './runtime'

type Module = Awaited<ReturnType<typeof transformers>>
type Tokenizer = Awaited<ReturnType<Module['AutoTokenizer']['from_pretrained']>>

/**
 * Streams text token by token. transformers.js's TextStreamer holds text back until a space or a
 * newline and re-decodes everything it holds on every token; this one decodes a sliding window
 * (the offsets technique of Hugging Face's text-generation-inference), so each token's text goes
 * out as soon as it forms whole characters, at constant cost per token.
 */
export function tokenStreamer(module: Module, tokenizer: Tokenizer, onText: (text: string) => void) {
  const BaseStreamer = module.BaseStreamer as unknown as new () => object
  const decode = (ids: bigint[]) => (ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : '')
  return new (class extends BaseStreamer {
    tokens: bigint[] = []
    generated = 0
    private prompt = true
    private prefixOffset = 0
    private readOffset = 0

    put(value: bigint[][]) {
      if (this.prompt) {
        // The first call carries the prompt.
        this.prompt = false
        return
      }
      const ids = value[0] ?? []
      this.generated += ids.length
      this.tokens.push(...ids)
      const prefix = decode(this.tokens.slice(this.prefixOffset, this.readOffset))
      const text = decode(this.tokens.slice(this.prefixOffset))
      // A trailing U+FFFD means a multi-byte character is not complete yet: wait for more tokens.
      if (text.length > prefix.length && !text.endsWith('\uFFFD')) {
        onText(text.slice(prefix.length))
        this.prefixOffset = this.readOffset
        this.readOffset = this.tokens.length
      }
    }

    end() {
      const prefix = decode(this.tokens.slice(this.prefixOffset, this.readOffset))
      const text = decode(this.tokens.slice(this.prefixOffset))
      if (text.length > prefix.length) onText(text.slice(prefix.length))
    }
  })()
}
