import { createHash } from 'node:crypto'
import { readLabelled } from '../intent/classifier'
import type { CommandGrammar } from './pocketsphinx'

const SMALL = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen']
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety']

/** 0..999999 as spoken English words. */
export function numberToWords(n: number): string[] {
  if (n < 20) return [SMALL[n]!]
  if (n < 100) return n % 10 ? [TENS[Math.floor(n / 10)]!, SMALL[n % 10]!] : [TENS[n / 10]!]
  if (n < 1000) return [SMALL[Math.floor(n / 100)]!, 'hundred', ...(n % 100 ? numberToWords(n % 100) : [])]
  return [...numberToWords(Math.floor(n / 1000)), 'thousand', ...(n % 1000 ? numberToWords(n % 1000) : [])]
}

/** Text as the words a speaker says: lower case, digits spelled, names split at - and _. */
export function spokenWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’']/g, '')
    .replace(/\d+/g, (digits) => (digits.length <= 6 ? ` ${numberToWords(Number(digits)).join(' ')} ` : ` ${[...digits].map((d) => SMALL[Number(d)]).join(' ')} `))
    .split(/[^a-z]+/)
    .filter(Boolean)
}

const NUMBER_RULES: Record<string, string[][]> = {
  digit: SMALL.slice(1, 10).map((w) => [w]),
  teen: SMALL.slice(10).map((w) => [w]),
  tens: TENS.slice(2).map((w) => [w]),
  under100: [['zero'], ['<digit>'], ['<teen>'], ['<tens>'], ['<tens>', '<digit>']],
  number: [['<under100>'], ['<digit>', 'hundred'], ['<digit>', 'hundred', '<under100>'], ['<digit>', 'hundred', 'and', '<under100>']],
}
const NUMBER_WORDS = new Set([...SMALL, ...TENS.filter(Boolean), 'hundred', 'thousand', 'and'])

export interface GrammarNames {
  collections: string[]
  plugins: string[]
  agents: string[]
}

let phrases: Promise<string[][]> | undefined

/** The training phrases as spoken word lists, numbers replaced by the `<number>` rule. */
function commandPhrases(trainingFile: string): Promise<string[][]> {
  phrases ??= Bun.file(trainingFile)
    .text()
    .then((content) =>
      readLabelled(content)
        .filter(({ intent }) => intent !== 'unknown')
        .map(({ text }) => {
          const words = spokenWords(text)
          const out: string[] = []
          for (const word of words) {
            const isNumber = NUMBER_WORDS.has(word) && word !== 'and'
            if (isNumber) {
              if (out.at(-1) !== '<number>') out.push('<number>')
            } else if (!(word === 'and' && out.at(-1) === '<number>')) out.push(word)
          }
          return out
        }),
    )
  return phrases
}

/**
 * The `commands` grammar for one user: every training phrasing, plus templates that take this
 * user's collection, plugin and agent names and a topic of words from the phrasings.
 */
export async function buildCommandGrammar(trainingFile: string, names: GrammarNames): Promise<CommandGrammar> {
  const base = await commandPhrases(trainingFile)
  const alternatives = (list: string[]) => [...new Set(list.map((n) => spokenWords(n).join(' ')).filter(Boolean))].map((n) => n.split(' '))
  const rules: Record<string, string[][]> = {
    ...NUMBER_RULES,
    collection: [['my', 'documents'], ['my', 'notes'], ['my', 'files'], ['docs'], ['the', 'handbook'], ...alternatives(names.collections).flatMap((n) => [n, ['the', ...n]])],
    plugin: [['calculator'], ['text'], ...alternatives(names.plugins)],
    agent: [['researcher'], ['analyst'], ['writer'], ['critic'], ['planner'], ['summarizer'], ...alternatives(names.agents)],
    operator: [['plus'], ['minus'], ['times'], ['divided', 'by'], ['multiplied', 'by']],
  }
  // Each phrasing that names a sample collection, plugin or agent also takes this user's own.
  const slots: [RegExp, string][] = [
    [/\b(my documents|my notes|my files|the handbook|the docs|docs)\b/, '<collection>'],
    [/\b(calculator|text|datetime|knowledge)(?= plugin)/, '<plugin>'],
    [/\b(researcher|analyst|writer|critic|planner|summarizer)\b/, '<agent>'],
    [/\b(plus|minus|times|divided by|multiplied by)\b/, '<operator>'],
  ]
  const templates = base.flatMap((phrase) => {
    const text = phrase.join(' ')
    const variant = slots.reduce((current, [pattern, rule]) => current.replace(pattern, rule), text)
    return variant === text ? [] : [variant.split(' ')]
  })
  const all0 = [...base, ...templates]
  const seen = new Set<string>()
  const all = all0.filter((p) => {
    const key = p.join(' ')
    if (!p.length || seen.has(key)) return false
    seen.add(key)
    return true
  })
  const name = `g${createHash('sha1').update(JSON.stringify([all, rules])).digest('hex').slice(0, 16)}`
  return { name, phrases: all, rules }
}
