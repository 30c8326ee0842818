import { describe, expect, test } from 'bun:test'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureIntentModel, INTENTS, IntentClassifier, intentClassifier, intentModelFile, intentModelKey, readLabelled, TRAINING_FILE } from '../../../src/ml/intent/classifier'
import { tempDir } from '../../helpers'
import { arithmeticExpression, extractEntities } from '../../../src/ml/intent/entities'
import { wordsToDigits } from '../../../src/ml/intent/numbers'

const heldOut = readLabelled(await Bun.file(new URL('../../fixtures/intents.heldout.txt', import.meta.url)).text())
const training = readLabelled(await Bun.file(TRAINING_FILE).text())

describe('intent classifier', () => {
  test('the repository holds at least 30 training phrasings per intent, and a held-out set of 60+ kept apart', () => {
    for (const intent of INTENTS) expect(training.filter((p) => p.intent === intent).length).toBeGreaterThanOrEqual(30)
    expect(heldOut.length).toBeGreaterThanOrEqual(60)
    const trained = new Set(training.map((p) => p.text))
    for (const phrase of heldOut) expect(trained.has(phrase.text)).toBe(false)
  })

  test('at least 90% of the held-out phrasings get their intent', async () => {
    const classifier = await intentClassifier()
    const misses = heldOut.filter((p) => classifier.predict(p.text).intent !== p.intent)
    const accuracy = 1 - misses.length / heldOut.length
    if (accuracy < 0.9) console.log('misses:', misses)
    expect(accuracy).toBeGreaterThanOrEqual(0.9)
  })

  test('gibberish and empty text are unknown', async () => {
    const classifier = await intentClassifier()
    expect(classifier.predict('').intent).toBe('unknown')
    expect(classifier.predict('qwop zxq').intent).toBe('unknown')
  })
})

describe('the trained model, cached', () => {
  test('is trained once (by a child process) and kept; a second start with the same data loads it, untrained', async () => {
    const dir = tempDir('intent-cache')
    const file = await ensureIntentModel(dir)
    expect(file).toBe(await intentModelFile(dir))
    expect(existsSync(file)).toBe(true)
    const made = statSync(file).mtimeMs
    // The second start finds it: the same file, not written again.
    expect(await ensureIntentModel(dir)).toBe(file)
    expect(statSync(file).mtimeMs).toBe(made)
    const loaded = await IntentClassifier.load(await Bun.file(file).bytes())
    expect(loaded.predict('what time is it').intent).toBe('time')
  })

  test('a change of training data gives another key, so the model is trained again', async () => {
    const content = await Bun.file(TRAINING_FILE).text()
    expect(intentModelKey(content)).toBe(intentModelKey(content))
    expect(intentModelKey(`${content}__label__time what hour is it now please\n`)).not.toBe(intentModelKey(content))
    // Formatting that normalizes away (case, punctuation) is the same training data.
    expect(intentModelKey(content.replace('__label__time what time is it', '__label__time What time is it?'))).toBe(intentModelKey(content))
    const dir = tempDir('intent-cache-stale')
    const stale = join(dir, `intents-${intentModelKey(`${content}__label__chat something else entirely\n`)}.bin`)
    writeFileSync(stale, 'not the current model')
    const file = await ensureIntentModel(dir)
    expect(file).not.toBe(stale)
    expect(existsSync(file)).toBe(true)
  })
})

describe('entities', () => {
  const names = { collections: ['docs', 'team-notes'], plugins: ['calculator', 'text'], agents: ['researcher', 'writer'] }
  const now = new Date('2026-03-10T12:00:00Z')

  test('numbers (spoken or written), dates, and the collection, plugin and agent names this user has', async () => {
    expect(await extractEntities('what is seventeen plus twenty five', names, { now })).toEqual(['number:17', 'number:25'])
    expect(await extractEntities('use the calculator to multiply 6 by 7', names, { now })).toEqual(['number:6', 'number:7', 'plugin:calculator'])
    expect(await extractEntities('search the team notes for invoices from tomorrow', names, { now, timeZone: 'UTC' })).toEqual(['date:2026-03-11', 'collection:team-notes'])
    expect(await extractEntities('ask the researcher about the meeting on April 2 2026', names, { now, timeZone: 'UTC' })).toEqual(['date:2026-04-02', 'agent:researcher'])
    expect(await extractEntities('search docs for backups', names, { now })).toEqual(['collection:docs'])
    // A name the user does not have is not an entity.
    expect(await extractEntities('search handbook for backups', names, { now })).toEqual([])
  })

  test('arithmetic in words becomes a calculator expression', () => {
    expect(arithmeticExpression('what is seventeen plus twenty five')).toBe('17 + 25')
    expect(arithmeticExpression('subtract 9 from 30')).toBe('30 - 9')
    expect(arithmeticExpression('divide one hundred by four')).toBe('100 / 4')
    expect(arithmeticExpression('what is 15 percent of 80')).toBe('15 / 100 * 80')
    expect(arithmeticExpression('What is 15% of 200?')).toBe('15 / 100 * 200')
    expect(arithmeticExpression('tell me a joke')).toBeNull()
    expect(wordsToDigits('two hundred and six people and five cats')).toBe('206 people and 5 cats')
  })
})
