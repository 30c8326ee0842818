import { describe, expect, test } from 'bun:test'
import { ExtractiveGenerator, findPassages, NO_MODEL_NOTICE } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

describe('built-in hash embedder', () => {
  const embedder = new HashEmbedder()

  test('384 normalised dimensions, deterministic', async () => {
    const [a, b] = await embedder.embed(['The cat sat on the mat.', 'The cat sat on the mat.'])
    expect(embedder.id).toBe('builtin/hash-embed-384')
    expect(a!.length).toBe(384)
    expect(Math.sqrt(dot(a!, a!))).toBeCloseTo(1, 5)
    expect([...a!]).toEqual([...b!])
  })

  test('ranks a relevant sentence above an unrelated one', async () => {
    const [query, relevant, unrelated] = await embedder.embed([
      'how do I reset my password',
      'To reset a forgotten password, open Settings and choose "Reset password".',
      'The museum opens at nine and closes at five on weekdays.',
    ])
    expect(dot(query!, relevant!)).toBeGreaterThan(dot(query!, unrelated!) + 0.1)
  })

  test('word forms meet through stems and character n-grams', async () => {
    const [query, inflected, other] = await embedder.embed(['connecting printers', 'The printer connection guide', 'Baking bread at home'])
    expect(dot(query!, inflected!)).toBeGreaterThan(dot(query!, other!))
  })

  test('empty text embeds to a zero vector without failing', async () => {
    const [empty] = await embedder.embed([''])
    expect(dot(empty!, empty!)).toBe(0)
  })
})

describe('built-in extractive generator', () => {
  const generator = new ExtractiveGenerator()
  const passages = [
    '[1] Paris is the capital of France. It lies on the Seine.',
    '[2] Water boils at 100 degrees Celsius at sea level.',
    '[3] Cats sleep for most of the day.',
  ].join('\n')

  test('answers from numbered passages and cites them', async () => {
    const result = await generator.generate([
      { role: 'system', content: 'Answer from the sources and cite them.' },
      { role: 'user', content: `Sources:\n${passages}\n\nQuestion: At what temperature does water boil?` },
    ])
    expect(result.text).toContain('Water boils at 100 degrees Celsius')
    expect(result.text).toContain('[2]')
    expect(result.text).not.toContain('[3]')
    expect(result.completionTokens).toBeGreaterThan(0)
    expect(result.promptTokens).toBeGreaterThan(result.completionTokens)
  })

  test('says so when the passages do not hold the answer', async () => {
    const result = await generator.generate([{ role: 'user', content: `${passages}\nQuestion: Who wrote Hamlet?` }])
    expect(result.text).toContain('do not contain an answer')
  })

  test('without context it says plainly that no generative model is installed', async () => {
    const result = await generator.generate([{ role: 'user', content: 'Hello there!' }])
    expect(result.text).toBe(NO_MODEL_NOTICE)
  })

  test('uses free context given in a system message', async () => {
    const result = await generator.generate([
      { role: 'system', content: 'Context:\nThe deploy window is Tuesday at 14:00. Lunch is at noon.' },
      { role: 'user', content: 'When is the deploy window?' },
    ])
    expect(result.text).toContain('The deploy window is Tuesday at 14:00.')
    expect(result.text).not.toContain('Lunch')
  })

  test('streams word pieces that concatenate to the whole answer; honours maxTokens, stops and cancellation', async () => {
    const messages = [{ role: 'user' as const, content: 'Hello' }]
    const pieces: string[] = []
    for await (const piece of generator.stream(messages)) pieces.push(piece)
    expect(pieces.length).toBeGreaterThan(5)
    expect(pieces.join('')).toBe(NO_MODEL_NOTICE)

    const limited = await generator.generate(messages, { maxTokens: 3 })
    expect(limited.completionTokens).toBe(3)
    expect(limited.finishReason).toBe('length')

    const stopped = await generator.generate(messages, { stop: ['installed'] })
    expect(stopped.text.trim()).toBe('No generative language model is')

    const controller = new AbortController()
    const seen: string[] = []
    for await (const piece of generator.stream(messages, {}, controller.signal)) {
      seen.push(piece)
      if (seen.length === 2) controller.abort()
    }
    expect(seen.length).toBe(2)
  })

  test('finds multi-line passages', () => {
    expect(findPassages([{ role: 'user', content: '[1] first line\ncontinued\n\n[2] second' }])).toEqual([
      { number: 1, text: 'first line continued' },
      { number: 2, text: 'second' },
    ])
  })
})
