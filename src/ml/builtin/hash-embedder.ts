import type { Embedder } from '../types'
import { STOPWORDS, stem, words } from '../text'

const DIMENSIONS = 384

const FNV_PRIME = 0x01000193
/** FNV-1a state after `text`, continuing from `hash`. */
function fnvMore(hash: number, text: string): number {
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME)
  return hash
}
const WORD_SEED = fnvMore(0x811c9dc5, 'w:')
const BIGRAM_SEED = fnvMore(0x811c9dc5, 'b:')
const TRIGRAM_SEED = fnvMore(0x811c9dc5, 'c:')
const SPACE = ' '.charCodeAt(0)
const OPEN = '<'.charCodeAt(0)
const CLOSE = '>'.charCodeAt(0)
const STEM_CACHE_LIMIT = 100_000
/** Weight of each kind of feature: words 1, bigrams 0.5, trigrams 0.25. */
const WEIGHTS = [0, 1, 0.5, 0.25]

/**
 * The built-in embedder, used when no embedding model is installed: feature hashing of
 * stemmed words (weight 1), word bigrams (0.5) and character trigrams inside words (0.25, so
 * "connect" and "connection" still meet), with sublinear term frequency, signed buckets to
 * cancel collisions, and L2 normalisation. Deterministic, no weights, ~tens of thousands of
 * short texts per second. It captures shared vocabulary, not meaning: install a real model for
 * paraphrase-level retrieval (models/README.md).
 *
 * Features are hashed in place (FNV-1a of "w:term", "b:term next", "c:abc", computed without
 * building those strings) and counted by hash, and stems are memoised: about three times the
 * speed of building and hashing each feature string, with the same vectors (two different
 * features of one text would have to share all 32 bits of their hash to be counted together).
 */
export class HashEmbedder implements Embedder {
  readonly id: string
  readonly dimensions: number
  /** Buckets each feature is spread over (1: the product's; more: measured by scripts/measure-embedders.ts). */
  private readonly hashes: number
  private readonly stems = new Map<string, string>()

  constructor(options: { dimensions?: number; hashes?: number } = {}) {
    this.dimensions = options.dimensions ?? DIMENSIONS
    this.hashes = options.hashes ?? 1
    this.id = `builtin/hash-embed-${this.dimensions}${this.hashes > 1 ? `x${this.hashes}` : ''}`
  }

  /** Content words, stemmed: `keyTerms` of ../text, with the stems memoised. */
  private terms(text: string): string[] {
    const terms: string[] = []
    for (const word of words(text)) {
      if (STOPWORDS.has(word)) continue
      let stemmed = this.stems.get(word)
      if (stemmed === undefined) {
        if (this.stems.size >= STEM_CACHE_LIMIT) this.stems.clear()
        stemmed = stem(word)
        this.stems.set(word, stemmed)
      }
      terms.push(stemmed)
    }
    return terms
  }

  // Feature counts of the text being embedded: an open-addressing table keyed by (hash, kind),
  // reused from call to call (kinds: 1 word, 2 bigram, 3 trigram; 0 marks a free slot).
  private featureHashes = new Int32Array(1024)
  private kinds = new Uint8Array(1024)
  private counts = new Int32Array(1024)
  /** Occupied slots in insertion order. */
  private order = new Int32Array(512)
  private features = 0

  private count(hash: number, kind: number): void {
    const mask = this.kinds.length - 1
    let slot = (hash ^ (hash >>> 15)) & mask
    for (;;) {
      const k = this.kinds[slot]!
      if (k === 0) break
      if (k === kind && this.featureHashes[slot] === hash) {
        this.counts[slot]!++
        return
      }
      slot = (slot + 1) & mask
    }
    this.kinds[slot] = kind
    this.featureHashes[slot] = hash
    this.counts[slot] = 1
    this.order[this.features++] = slot
    if (this.features * 2 >= this.kinds.length) this.grow()
  }

  private grow(): void {
    const { featureHashes: hashes, kinds, counts, order, features } = this
    this.featureHashes = new Int32Array(hashes.length * 2)
    this.kinds = new Uint8Array(kinds.length * 2)
    this.counts = new Int32Array(counts.length * 2)
    this.order = new Int32Array(order.length * 2)
    this.features = 0
    for (let i = 0; i < features; i++) {
      const slot = order[i]!
      this.count(hashes[slot]!, kinds[slot]!)
      this.counts[this.order[this.features - 1]!] = counts[slot]!
    }
  }

  embedOne(text: string): Float32Array {
    const terms = this.terms(text)
    for (let i = 0; i < terms.length; i++) {
      const term = terms[i]!
      this.count(fnvMore(WORD_SEED, term), 1)
      if (i + 1 < terms.length) this.count(fnvMore(Math.imul(fnvMore(BIGRAM_SEED, term) ^ SPACE, FNV_PRIME), terms[i + 1]!), 2)
      // Trigrams of "<term>".
      const last = term.length
      let a = OPEN
      let b = term.charCodeAt(0)
      for (let j = 1; j <= last; j++) {
        const c = j === last ? CLOSE : term.charCodeAt(j)
        this.count(Math.imul(Math.imul(Math.imul(TRIGRAM_SEED ^ a, FNV_PRIME) ^ b, FNV_PRIME) ^ c, FNV_PRIME), 3)
        a = b
        b = c
      }
    }
    const dimensions = this.dimensions
    const vector = new Float32Array(dimensions)
    const spread = 1 / Math.sqrt(this.hashes)
    for (let i = 0; i < this.features; i++) {
      const slot = this.order[i]!
      let hash = this.featureHashes[slot]! >>> 0
      const value = WEIGHTS[this.kinds[slot]!]! * (1 + Math.log(this.counts[slot]!))
      vector[hash % dimensions]! += (hash & 0x80000000 ? -1 : 1) * value * spread
      // Further buckets from the hash re-mixed (murmur3's finaliser): a collision then shares only part of a feature.
      for (let k = 1; k < this.hashes; k++) {
        hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b)
        hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35)
        hash = (hash ^ (hash >>> 16)) >>> 0
        vector[hash % dimensions]! += (hash & 0x80000000 ? -1 : 1) * value * spread
      }
      this.kinds[slot] = 0
    }
    this.features = 0
    let norm = 0
    for (let i = 0; i < dimensions; i++) norm += vector[i]! * vector[i]!
    norm = Math.sqrt(norm)
    if (norm > 0) for (let i = 0; i < dimensions; i++) vector[i]! /= norm
    return vector
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text))
  }
}
