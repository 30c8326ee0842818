const WORD = /[\p{L}\p{N}]+(?:['’\-.][\p{L}\p{N}]+)*/gu

export function words(text: string): string[] {
  return text.match(WORD) ?? []
}

/**
 * Sentences: text split after . ! ? (and …) followed by white space or the end; a piece with
 * no letter or digit is not a sentence. "3.14" and "example.com" do not split.
 */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?…]["'”’)\]]*)\s+/u)
    .map((piece) => piece.trim())
    .filter((piece) => /[\p{L}\p{N}]/u.test(piece))
}

export function stats(params: { text: string }) {
  const { text } = params
  const wordList = words(text)
  return {
    characters: [...text].length,
    charactersNoSpaces: [...text.replace(/\s/g, '')].length,
    words: wordList.length,
    sentences: sentences(text).length,
    paragraphs: text.split(/\n\s*\n/).filter((p) => /[\p{L}\p{N}]/u.test(p)).length,
    lines: text === '' ? 0 : text.split(/\r\n|\r|\n/).length,
    // 230 words a minute: a common figure for reading on screen.
    readingTimeSeconds: Math.ceil((wordList.length / 230) * 60),
  }
}

export function slugify(params: { text: string; separator?: string; maxLength?: number }) {
  const separator = params.separator ?? '-'
  const plain = params.text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/ß/g, 'ss')
    .replace(/æ/gi, 'ae')
    .replace(/ø/gi, 'o')
    .replace(/œ/gi, 'oe')
    .replace(/ł/gi, 'l')
    .toLowerCase()
  let slug = (plain.match(/[\p{L}\p{N}]+/gu) ?? []).join(separator)
  const max = params.maxLength ?? 80
  if ([...slug].length > max) {
    slug = [...slug].slice(0, max).join('')
    if (separator) slug = slug.replace(new RegExp(`${separator.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}+$`), '')
  }
  return { slug }
}

const STOP_WORDS = new Set(
  ('a an and are as at be been but by for from had has have he her his i if in into is it its of on or our she so than that the their them ' +
    'then there these they this to was we were what when which while who will with would you your not no do does did can could should may might')
    .split(' '),
)

/**
 * Extractive summary: each sentence scored by the frequency of its content words in the whole
 * text (a long sentence does not win by length alone), the best `sentences` kept in their order.
 */
export function summarize(params: { text: string; sentences?: number }) {
  const all = sentences(params.text)
  const wanted = Math.min(params.sentences ?? 3, all.length)
  const frequency = new Map<string, number>()
  const contentWords = (sentence: string) => words(sentence.toLowerCase()).filter((w) => !STOP_WORDS.has(w) && w.length > 1)
  for (const sentence of all) for (const word of contentWords(sentence)) frequency.set(word, (frequency.get(word) ?? 0) + 1)
  const scored = all.map((sentence, index) => {
    const own = contentWords(sentence)
    const score = own.length ? own.reduce((sum, word) => sum + frequency.get(word)!, 0) / Math.sqrt(own.length) : 0
    return { sentence, index, score }
  })
  const chosen = [...scored]
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, wanted)
    .sort((a, b) => a.index - b.index)
  return {
    summary: chosen.map((c) => c.sentence).join(' '),
    sentences: chosen.map((c) => c.sentence),
    originalSentences: all.length,
  }
}
