import { describe, expect, test } from 'bun:test'
import { fts5Query, matchExcerpt, searchTerms, tsQuery } from '../../../src/modules/conversations/search'
import type { Conversation } from '../../../src/modules/conversations/store'

const conversation = (title: string, ...contents: string[]): Conversation => ({
  id: 'c',
  userId: 'u',
  title,
  createdAt: '',
  updatedAt: '',
  messages: contents.map((content, i) => ({ id: `m${i}`, role: i % 2 ? 'assistant' : 'user', content, timestamp: '' })),
})

describe('search words', () => {
  test('letters and digits only, lowercased, each once; operators and quotes of either backend never reach a query', () => {
    expect(searchTerms('Deploy WINDOW deploy')).toEqual(['deploy', 'window'])
    expect(searchTerms('"tuesday" OR NEAR(x*) -- \'; DROP')).toEqual(['tuesday', 'or', 'near', 'x', 'drop'])
    expect(searchTerms('Zürich café 2026')).toEqual(['zürich', 'café', '2026'])
    expect(fts5Query(['deploy', 'window'])).toBe('"deploy"* AND "window"*')
    expect(tsQuery(['deploy', 'window'])).toBe("'deploy':* & 'window':*")
  })

  test('nothing to search for, or too many words: 400 naming q', () => {
    for (const q of ['', '   ', '!!! ***', Array.from({ length: 13 }, (_, i) => `w${i}`).join(' ')]) {
      let caught: { code?: string; message?: string } = {}
      try {
        searchTerms(q)
      } catch (error) {
        caught = error as typeof caught
      }
      expect(caught.code).toBe('VALIDATION_ERROR')
      expect(caught.message).toContain('query.q')
    }
  })
})

describe('the match excerpt', () => {
  test('from the newest message holding every word, around the first, cut at word boundaries on one line', () => {
    const long = `${'Lorem ipsum dolor sit amet. '.repeat(10)}The deploy\nwindow is Tuesday at 14:00. ${'Trailing words go on and on. '.repeat(10)}`
    const excerpt = matchExcerpt(conversation('Title', 'deploy here but no w-word', long, 'only window here'), ['deploy', 'window'])
    expect(excerpt).toStartWith('…')
    expect(excerpt).toEndWith('…')
    expect(excerpt).toContain('The deploy window is Tuesday at 14:00.')
    expect(excerpt).not.toContain('\n')
    expect(excerpt.length).toBeLessThanOrEqual(170)
  })

  test('a word must start a word of the text (as the indexes match); the title when no message holds them', () => {
    expect(matchExcerpt(conversation('Quarterly budget', 'redeploy the budget'), ['deploy', 'budget'])).toBe('Quarterly budget')
    expect(matchExcerpt(conversation('t', 'Short one: deployment budget.'), ['deploy', 'budget'])).toBe('Short one: deployment budget.')
  })
})
