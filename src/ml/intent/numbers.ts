const UNITS: Record<string, number> = {
  zero: 0, oh: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
}
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 }
const SCALES: Record<string, number> = { hundred: 100, thousand: 1000, million: 1_000_000 }

const isNumberWord = (word: string) => word in UNITS || word in TENS || word in SCALES

/**
 * Spoken numbers to digits: "seventeen plus twenty five" → "17 plus 25", "two hundred and six" → "206".
 * ("oh" counts only inside a number; "and" only between number words.)
 */
export function wordsToDigits(text: string): string {
  const words = text.split(/\s+/).filter(Boolean)
  const out: string[] = []
  let i = 0
  while (i < words.length) {
    const word = words[i]!.toLowerCase()
    if (!isNumberWord(word) || word === 'oh') {
      out.push(words[i]!)
      i++
      continue
    }
    let total = 0
    let current = 0
    let previous: 'unit' | 'ten' | 'scale' | null = null
    while (i < words.length) {
      const w = words[i]!.toLowerCase()
      if (w === 'and' && previous === 'scale' && i + 1 < words.length && isNumberWord(words[i + 1]!.toLowerCase())) {
        i++
        continue
      }
      if (w in UNITS && w !== 'oh') {
        // "twenty five" joins; "five five" does not.
        if (previous === 'unit' || (previous === 'ten' && UNITS[w]! >= 10)) break
        current += UNITS[w]!
        previous = 'unit'
      } else if (w in TENS) {
        if (previous === 'unit' || previous === 'ten') break
        current += TENS[w]!
        previous = 'ten'
      } else if (w in SCALES) {
        const scale = SCALES[w]!
        if (scale === 100) current = (current || 1) * 100
        else {
          total += (current || 1) * scale
          current = 0
        }
        previous = 'scale'
      } else break
      i++
    }
    out.push(String(total + current))
  }
  return out.join(' ')
}
