import type { Embedder } from '../types'
import { keyTerms } from '../text'

const DIMENSIONS = 384

/** FNV-1a, 32-bit. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/**
 * The built-in embedder, used when no embedding model is installed: feature hashing of
 * stemmed words (weight 1), word bigrams (0.5) and character trigrams inside words (0.25, so
 * "connect" and "connection" still meet), with sublinear term frequency, signed buckets to
 * cancel collisions, and L2 normalisation. Deterministic, no weights, ~tens of thousands of
 * short texts per second. It captures shared vocabulary, not meaning: install a real model for
 * paraphrase-level retrieval (models/README.md).
 */
export class HashEmbedder implements Embedder {
  readonly id = `builtin/hash-embed-${DIMENSIONS}`
  readonly dimensions = DIMENSIONS

  embedOne(text: string): Float32Array {
    // feature → [occurrences, weight of its kind]
    const features = new Map<string, [number, number]>()
    const add = (feature: string, weight: number) => {
      const seen = features.get(feature)
      if (seen) seen[0]++
      else features.set(feature, [1, weight])
    }
    const terms = keyTerms(text)
    for (let i = 0; i < terms.length; i++) {
      const term = terms[i]!
      add(`w:${term}`, 1)
      if (i + 1 < terms.length) add(`b:${term} ${terms[i + 1]}`, 0.5)
      const padded = `<${term}>`
      for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, 0.25)
    }
    const vector = new Float32Array(DIMENSIONS)
    for (const [feature, [count, weight]] of features) {
      const hash = fnv1a(feature)
      const sign = hash & 0x80000000 ? -1 : 1
      vector[hash % DIMENSIONS]! += sign * weight * (1 + Math.log(count))
    }
    let norm = 0
    for (let i = 0; i < DIMENSIONS; i++) norm += vector[i]! * vector[i]!
    norm = Math.sqrt(norm)
    if (norm > 0) for (let i = 0; i < DIMENSIONS; i++) vector[i]! /= norm
    return vector
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text))
  }
}
