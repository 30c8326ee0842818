// Synonyms and word forms (issue 37, point 5): WordNet's lemmas and synonyms in query expansion,
// weighted so that a passage with the exact word still ranks first.
import { describe, expect, test } from 'bun:test'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { wordnet } from '../../src/ml/wordnet'
import { synonymsOf } from '../../src/modules/rag/ranking/expansion'
import { inMemoryRag } from '../rag-service'

const DOCUMENTS = [
  { id: 'vehicles', content: 'Company automobiles are booked through the fleet desk two days ahead. Return the keys to reception.' },
  { id: 'procurement', content: 'To purchase software licences, open a ticket with procurement and attach the quote from the vendor.' },
  { id: 'backups', content: 'Backups are encrypted with AES-256 before they leave the server; the key stays in the vault.' },
  { id: 'cars-parking', content: 'Visitors park their car in the lower garage and get a ticket at the gate.' },
  { id: 'meetings', content: 'Meeting rooms on the third floor are booked in the calendar; cancel a booking you no longer need.' },
  { id: 'printing', content: 'Printers on every floor take badges; colour printing is limited to 200 pages a month.' },
  { id: 'holidays', content: 'Holidays are requested in the HR portal at least two weeks before, and approved by your manager.' },
]

describe('WordNet', () => {
  const lexicon = wordnet()!
  test('lemmas and synonyms of a word', () => {
    expect(lexicon).not.toBeNull()
    expect(lexicon.lemmas('encrypted').map((l) => `${l.lemma}/${l.pos}`)).toEqual(['encrypt/verb'])
    expect(lexicon.lemmas('copies').map((l) => l.lemma)).toContain('copy')
    expect(lexicon.synonyms('car')).toContain('automobile')
    expect(lexicon.synonyms('buy')).toContain('purchase')
    expect(lexicon.synonyms('cipher')).toContain('encrypt')
    expect(lexicon.synonyms('zzzqx')).toEqual([])
  })

  test('query expansion leaves out the query\'s own words and their forms', () => {
    const expanded = synonymsOf('How do I buy a car for the installation team?')
    expect(expanded).toContain('purchase')
    expect(expanded).toContain('automobile')
    expect(expanded).not.toContain('installing')
    expect(expanded).not.toContain('car')
  })
})

describe('search with synonyms', () => {
  test('"buy", "cipher" and "automobile" find passages that say purchase, encrypted and car', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'office', DOCUMENTS)
    const top = async (query: string) => (await rag.search('u', 'office', query, 3)).results.map((r) => r.id)
    expect((await top('buy'))[0]).toBe('procurement')
    expect((await top('cipher'))[0]).toBe('backups')
    expect((await top('automobile')).slice(0, 2)).toEqual(['vehicles', 'cars-parking'])
  })

  test('the exact word still wins over its synonym', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'office', DOCUMENTS)
    const { results } = await rag.search('u', 'office', 'car', 5)
    expect(results.slice(0, 2).map((r) => r.id)).toEqual(['cars-parking', 'vehicles'])
    expect(results[0]!.score).toBeGreaterThan(results[1]!.score)
  })

  test('an extractive answer counts a synonym in a sentence as the question\'s word', async () => {
    const text = (
      await new ExtractiveGenerator().generate([
        {
          role: 'user',
          content: 'Sources:\n[1] Laptops are handed out by the IT desk. To purchase software licences, open a ticket with procurement. Tickets are answered within a day.\n\nQuestion: How do I buy a licence?',
        },
      ])
    ).text
    expect(text.startsWith('To purchase software licences, open a ticket with procurement. [1]')).toBe(true)
  })
})
