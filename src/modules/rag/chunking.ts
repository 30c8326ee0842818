import { sentences } from '../../ml/text'

export interface ChunkOptions {
  /** Largest chunk, in characters. */
  maxChars: number
  /** Characters of trailing context repeated at the start of the next chunk. */
  overlapChars: number
}

/** Characters per chunk for an embedder that reads at most `maxTokens` tokens (~4 characters each, with headroom). */
export function chunkOptionsFor(maxTokens: number | undefined): ChunkOptions {
  const maxChars = Math.max(400, Math.min(2000, Math.round((maxTokens ?? 400) * 2.5)))
  return { maxChars, overlapChars: Math.round(maxChars * 0.15) }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/** Splits a sentence longer than a chunk at word boundaries. */
function splitLong(sentence: string, maxChars: number): string[] {
  if (sentence.length <= maxChars) return [sentence]
  const parts: string[] = []
  let current = ''
  for (const word of sentence.split(' ')) {
    if (current && current.length + 1 + word.length > maxChars) {
      parts.push(current)
      current = ''
    }
    // A single "word" longer than a chunk (a URL, base64) is cut hard, never inside a surrogate pair.
    for (let i = 0, end = 0; i < word.length; i = end) {
      end = Math.min(i + maxChars, word.length)
      if (end < word.length && end - i > 1 && isHighSurrogate(word.charCodeAt(end - 1))) end--
      const piece = word.slice(i, end)
      current = current ? `${current} ${piece}` : piece
      if (current.length >= maxChars) {
        parts.push(current)
        current = ''
      }
    }
  }
  if (current) parts.push(current)
  return parts
}

/** The last sentences of a chunk that fit in the overlap, to open the next one. */
function tail(units: string[], overlapChars: number): string[] {
  const kept: string[] = []
  let size = 0
  for (let i = units.length - 1; i >= 0; i--) {
    size += units[i]!.length + 1
    if (size > overlapChars) break
    kept.unshift(units[i]!)
  }
  return kept
}

/**
 * Splits a document into chunks on paragraph and sentence boundaries, each at most `maxChars`,
 * with the previous chunk's last sentences repeated (up to `overlapChars`) for context.
 * A paragraph break closes a chunk once it is half full, so chunks follow the text's structure.
 */
export function chunkDocument(text: string, options: ChunkOptions): string[] {
  const paragraphs = text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
  const chunks: string[] = []
  let units: string[] = []
  let size = 0
  let fresh = 0 // units in `units` not carried over from the previous chunk
  const flush = () => {
    if (fresh === 0) return
    chunks.push(units.join(' '))
    units = tail(units, options.overlapChars)
    size = units.reduce((n, u) => n + u.length + 1, 0)
    fresh = 0
  }
  for (const paragraph of paragraphs) {
    if (size >= options.maxChars / 2) flush()
    for (const sentence of sentences(paragraph).flatMap((s) => splitLong(s, options.maxChars))) {
      if (size + sentence.length + 1 > options.maxChars) {
        flush()
        // Drop carried-over context that would not leave room for this sentence.
        while (units.length && size + sentence.length + 1 > options.maxChars) size -= units.shift()!.length + 1
      }
      units.push(sentence)
      size += sentence.length + 1
      fresh++
    }
  }
  flush()
  return chunks
}
