import { describe, expect, test } from 'bun:test'
import { reviewWork } from '../../../src/modules/agents/review'
import { arithmeticIn, splitSteps, textUnits } from '../../../src/modules/agents/text-work'
import type { AgentResult } from '../../../src/modules/agents/types'

const result = (agent: string, response: string, extra: Partial<AgentResult> = {}): AgentResult => ({
  agent,
  role: agent,
  response,
  executionTime: 0,
  round: 1,
  startTime: '',
  endTime: '',
  toolCalls: [],
  ...extra,
})

describe('planning', () => {
  test('splits at sentences, sequencing words, semicolons and list items, and names an owner per step', () => {
    expect(splitSteps('Research our competitors, then compare their prices; finally write a one-page summary.').map((s) => [s.text, s.owner])).toEqual([
      ['Research our competitors', 'researcher'],
      ['Compare their prices', 'analyst'],
      ['Write a one-page summary', 'writer'],
    ])
    expect(splitSteps('- gather the sales figures\n- check them against last year').map((s) => [s.text, s.owner])).toEqual([
      ['Gather the sales figures', 'researcher'],
      ['Check them against last year', 'critic'],
    ])
    // "and" splits only between two clauses of some length, the second led by a verb.
    expect(splitSteps('Find the outage reports for March and summarize the causes of each outage').map((s) => s.text)).toEqual([
      'Find the outage reports for March',
      'Summarize the causes of each outage',
    ])
    expect(splitSteps('Salt and pepper').map((s) => s.text)).toEqual(['Salt and pepper'])
  })

  test('finds arithmetic, percentages included, but not dates', () => {
    expect(arithmeticIn('Budget 12 * (3 + 4), and 15% of 240; meeting on 2026-11-24.')).toEqual(['15 / 100 * 240', '12 * (3 + 4)'])
    expect(arithmeticIn('No numbers here')).toEqual([])
  })

  test('text units keep citations with their sentence and drop labels, headings and the sources list', () => {
    expect(textUnits('Analysis:\n- Evidence (researcher): It is 30 minutes. [1] Then it expires. [2]\n\nSources:\n[1] VPN guide')).toEqual([
      'It is 30 minutes. [1]',
      'Then it expires. [2]',
    ])
    // Notes about the work are not material: gaps, placeholders, "nothing found".
    expect(textUnits('- Gaps: nothing so far addresses "x".\nStep:\n(no material on this part yet)\nNo passage in your collections (a) matches this task.')).toEqual([])
  })
})

describe('review', () => {
  const task = 'Find the VPN reset steps, then explain how long the link is valid.'
  const steps = splitSteps(task).map((s) => s.text)

  test('no objection when every step is addressed with sources', () => {
    const work = [
      result('researcher', 'Open the portal to reset the VPN. [1]', { sources: [{ n: 1, collection: 'c', id: 'vpn', title: 'VPN', score: 0.8 }] }),
      result('writer', 'The link is valid for 30 minutes. [1]'),
    ]
    expect(reviewWork(work, steps)).toEqual({ objections: [], unaddressed: [], addressed: 1 })
  })

  test('a step asking for the write-up is addressed by a writer that wrote something', () => {
    const ask = 'Find the VPN reset steps and write a short summary for the team.'
    const askSteps = splitSteps(ask).map((s) => s.text)
    expect(askSteps).toEqual(['Find the VPN reset steps', 'Write a short summary for the team'])
    const research = result('researcher', 'Open the portal to reset the VPN. [1]', { sources: [{ n: 1, collection: 'c', id: 'vpn', title: 'VPN', score: 0.8 }] })
    expect(reviewWork([research], askSteps).unaddressed).toEqual(['Write a short summary for the team'])
    expect(reviewWork([research, result('writer', 'Write a short summary for the team:\n(no material on this part yet)')], askSteps).unaddressed).toEqual(['Write a short summary for the team'])
    expect(reviewWork([research, result('writer', 'Summary:\nReset the VPN from the portal. [1]')], askSteps).unaddressed).toEqual([])
  })

  test('objects to missing research, invented citations, empty output and steps only restated', () => {
    const work = [result('researcher', 'No passage in your collections matches this task.', { sources: [] }), result('writer', `${steps[1]}: see [3].`), result('analyst', '')]
    const review = reviewWork(work, steps)
    expect(review.objections).toEqual([
      'The analyst produced no output.',
      'The research found no passage on this task in your collections, so nothing in the work is backed by a source.',
      'The writer cites [3], which is not among the 0 sources found.',
      `Nothing in the work addresses the step "${steps[0]}".`,
      `Nothing in the work addresses the step "${steps[1]}".`,
    ])
    expect(review.addressed).toBe(0)
  })
})
