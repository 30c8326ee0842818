import { AppError } from '../../core/errors'
import type { Conversation } from './store'

/** Words a search takes at most (more are refused: a search is a few words, not a document). */
export const MAX_TERMS = 12

const WORD = /[\p{L}\p{N}]+/gu

/**
 * The words of a search, lowercased, each matched as a word's start ("deploy" finds "deployment"),
 * every one required. Letters and digits only: what a tokenizer keeps of anything else (quotes,
 * operators of either backend's query syntax) never reaches a query. 400 when none is left.
 */
export function searchTerms(q: string): string[] {
  const terms = [...new Set((q.normalize('NFC').toLowerCase().match(WORD) ?? []).map((word) => word.slice(0, 64)))]
  if (!terms.length) throw new AppError('VALIDATION_ERROR', 'query.q: give one or more words to search for (letters or digits)')
  if (terms.length > MAX_TERMS) throw new AppError('VALIDATION_ERROR', `query.q: at most ${MAX_TERMS} words, got ${terms.length}`)
  return terms
}

/** An FTS5 query: every term as a quoted prefix (`"deploy"* AND "window"*`). */
export function fts5Query(terms: string[]): string {
  return terms.map((term) => `"${term}"*`).join(' AND ')
}

/** A PostgreSQL tsquery: every term as a prefix (`'deploy':* & 'window':*`); terms hold letters and digits only. */
export function tsQuery(terms: string[]): string {
  return terms.map((term) => `'${term}':*`).join(' & ')
}

const EXCERPT = 160

/** Whether every term starts a word of `text` (as both backends' indexes match a word's start). */
export function holdsEvery(text: string, terms: string[]): boolean {
  return holds(text, terms) >= 0
}

/** Where the earliest of the terms starts a word of `text`, or -1 when one of them starts none. */
function holds(text: string, terms: string[]): number {
  const lower = text.toLowerCase()
  let first = -1
  for (const term of terms) {
    const at = wordStart(lower, term)
    if (at < 0) return -1
    if (first < 0 || at < first) first = at
  }
  return first
}

function wordStart(lower: string, term: string): number {
  let from = 0
  for (;;) {
    const at = lower.indexOf(term, from)
    if (at < 0) return -1
    if (at === 0 || !/[\p{L}\p{N}]/u.test(lower[at - 1]!)) return at
    from = at + 1
  }
}

/**
 * The excerpt a search shows for a conversation: around the first term in the newest message that
 * holds every term (the message the search found), else the title; about 160 characters on one
 * line, an ellipsis where it was cut.
 */
export function matchExcerpt(conversation: Conversation, terms: string[]): string {
  for (let i = conversation.messages.length - 1; i >= 0; i--) {
    const content = conversation.messages[i]!.content
    const at = holds(content, terms)
    if (at >= 0) return around(content, at)
  }
  return around(conversation.title, Math.max(0, holds(conversation.title, terms)))
}

function around(text: string, at: number): string {
  const flat = text.replace(/\s+/g, ' ')
  // Whitespace runs collapsed before `at` move it left by what they lost.
  const shift = text.slice(0, at).length - text.slice(0, at).replace(/\s+/g, ' ').length
  const position = at - shift
  let start = Math.max(0, position - 50)
  if (start > 0) {
    const space = flat.indexOf(' ', start)
    if (space >= 0 && space < position) start = space + 1
  }
  let end = Math.min(flat.length, start + EXCERPT)
  if (end < flat.length) {
    const space = flat.lastIndexOf(' ', end)
    if (space > position) end = space
  }
  return `${start > 0 ? '…' : ''}${flat.slice(start, end).trim()}${end < flat.length ? '…' : ''}`
}
