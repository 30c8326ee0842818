// Honest refusals that generalize (issue 37, point 4): a small handbook beside unrelated real
// documents; world-knowledge questions are refused, the handbook's questions answered.
import { describe, expect, test } from 'bun:test'
import harbor from '../../fixtures/kb-labelled.json'
import labelled from '../../fixtures/answers-labelled.json'
import world from '../../fixtures/world-questions.json'
import { answerQuestion, compoundsOf, questionCoverage } from '../../../src/modules/rag/answer/answer'
import { inMemoryRag } from '../../rag-service'

describe('refusals on a collection mixing a handbook with unrelated documents', () => {
  test('world questions are refused (both halves of the set), the handbook\'s questions answered from the right document', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'mixed', [...harbor.documents, ...labelled.documents])
    const ask = (question: string) => answerQuestion(rag, 'u', { question, collection: 'mixed', maxContext: 5, includeContext: false })
    const worldQuestions = [...world.calibrate, ...world.check, ...harbor.offTopic]
    let refused = 0
    for (const question of worldQuestions) {
      const { answer, sources } = await ask(question)
      if (sources.length === 0) {
        refused++
        expect(answer).toMatch(/could not find anything relevant|do not contain an answer/)
      }
    }
    expect(refused / worldQuestions.length).toBeGreaterThanOrEqual(0.9)
    let answered = 0
    for (const { question, expected } of harbor.onTopic) if ((await ask(question)).sources[0]?.id === expected) answered++
    for (const { question, document } of labelled.questions) if ((await ask(question)).sources.some((s) => s.id === document)) answered++
    expect(answered / (harbor.onTopic.length + labelled.questions.length)).toBeGreaterThanOrEqual(0.9)
  }, 120_000)

  test('coverage: the telling words of the question must be in the passages', () => {
    const terms = { chunks: 1000, terms: [{ word: 'painted', df: 3 }, { word: 'mona', df: 0 }, { word: 'lisa', df: 0 }] }
    expect(questionCoverage(terms, [{ content: 'The walls were painted white before the move.' }])).toBeLessThan(0.5)
    expect(questionCoverage(terms, [{ content: 'Leonardo painted the Mona Lisa in Florence.' }])).toBe(1)
    // A synonym in the passage counts, less than the word itself.
    const buy = { chunks: 1000, terms: [{ word: 'buy', df: 0 }, { word: 'licence', df: 10 }] }
    const synonym = questionCoverage(buy, [{ content: 'You can purchase a licence online.' }])
    expect(synonym).toBeGreaterThan(questionCoverage(buy, [{ content: 'You can renew a licence online.' }]))
    expect(synonym).toBeLessThan(questionCoverage(buy, [{ content: 'You can buy a licence online.' }]))
  })

  test('coverage: a two-word term WordNet knows is covered only by its words side by side', () => {
    expect(compoundsOf('When was the printing press invented?')).toEqual([['printing', 'press']])
    expect(compoundsOf('How do I change the retention policy?')).toEqual([])
    const terms = { chunks: 1000, terms: [{ word: 'black', df: 20 }, { word: 'hole', df: 12 }] }
    const apart = [{ content: 'The background turns black in dark mode.' }, { content: 'Punch a hole in the firewall for port 22.' }]
    const question = 'What is a black hole?'
    // Without the question's text (no two-word terms known), the words held apart cover it all.
    expect(questionCoverage(terms, apart)).toBe(1)
    expect(questionCoverage(terms, apart, question)).toBe(0)
    expect(questionCoverage(terms, [{ content: 'A black hole forms when a massive star collapses.' }], question)).toBe(1)
  })

  test('a world question whose two-word term the collection holds only word by word is refused', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'mixed', [...harbor.documents, ...labelled.documents, { id: 'themes', content: 'The dark theme paints the background black; the light theme keeps it white.' }, { id: 'firewall', content: 'Punch a hole in the firewall only for the ports a service needs.' }])
    const { sources } = await answerQuestion(rag, 'u', { question: 'What is a black hole?', collection: 'mixed', maxContext: 5, includeContext: false })
    expect(sources).toEqual([])
  })
})
