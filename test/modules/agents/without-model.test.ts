// Agents with the built-in engine only (issue 37, point 3): the planner's steps drive the work, the
// writer drafts from the caller's collections with its sources, and the synthesis is never empty.
import { describe, expect, test } from 'bun:test'
import { makeServer } from '../../helpers'

const OFFSITES = [
  {
    id: 'offsites.md',
    metadata: { title: 'Team offsites' },
    content:
      '# Team offsites\n\nAn offsite needs a budget approved by the team lead at least six weeks before the trip. Book the venue first, then flights and hotels through the travel desk.\n\n' +
      'For Lisbon, the company has a standing agreement with a meeting venue in the Alfama district that seats up to 40 people. ' +
      'The agenda should mix two half-days of planning sessions with one afternoon off-program.\n\nShare the final plan with the team two weeks before departure.',
  },
  { id: 'expenses.md', metadata: { title: 'Expenses' }, content: '# Expenses\n\nMeals during travel are reimbursed up to 60 euros a day. Keep every receipt and submit the expense report within 30 days.' },
]
const TASK = 'Write a short plan for a team offsite in Lisbon'

describe('agents without a model', () => {
  test('planner + writer draft from the caller\'s collection: the synthesis quotes it with attribution and sources, confidence from the evidence', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: OFFSITES } })
    const res = await server.call('POST', '/agents/execute', { token, body: { task: TASK, agents: ['planner', 'writer'] } })
    expect(res.status).toBe(200)
    const writer = res.json.results.find((r: { agent: string }) => r.agent === 'writer')
    expect(writer.response).not.toContain('(no material on this part yet)')
    expect(writer.response).toContain('Alfama district')
    expect(writer.response).toContain('[1] Team offsites (handbook/offsites.md')
    expect(res.json.finalSynthesis).toContain('From the writer: ')
    expect(res.json.finalSynthesis).toContain('Alfama district that seats up to 40 people. [1]')
    expect(res.json.finalSynthesis).toContain('Sources: [1] Team offsites.')
    expect(res.json.finalSynthesis).toContain(`Plan (planner): 1. ${TASK}.`)
    expect(res.json.confidence).toBeGreaterThan(0)
    expect(res.json.confidence).toBeLessThanOrEqual(1)
  }, 60_000)

  test('with nothing to draw on, the synthesis says so plainly and confidence is 0', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: TASK, agents: ['planner', 'writer'] } })
    expect(res.status).toBe(200)
    expect(res.json.finalSynthesis).toBe(
      'You have no collections to draw on, and no language model is installed to write from general knowledge, so the agents found no material to answer it with.' +
        `\n\nPlan (planner): 1. ${TASK}.`,
    )
    expect(res.json.confidence).toBe(0)
    // A collection about something else: still nothing found, said as such.
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'other', documents: [OFFSITES[1]!] } })
    const other = await server.call('POST', '/agents/execute', { token, body: { task: TASK, agents: ['writer'] } })
    expect(other.json.finalSynthesis).toStartWith('Nothing in your collections matches this task')
    expect(other.json.confidence).toBe(0)
    // Long texts about something else that share only how the task is to be written ("short", "plan"): still nothing.
    const licence = 'If the program does terminal interaction, make it output a short notice like this when it starts in an interactive mode. ' +
      'The plan is to keep the notice short. Write the notice in the program\'s language and show it at start.'
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'other', documents: [{ id: 'notices.md', content: licence }] } })
    const unrelated = await server.call('POST', '/agents/execute', { token, body: { task: TASK, agents: ['planner', 'writer'] } })
    expect(unrelated.json.finalSynthesis).toStartWith('Nothing in your collections matches this task')
    expect(unrelated.json.confidence).toBe(0)
  }, 60_000)

  test('researcher + writer + critic: every agent\'s contribution is named in the synthesis', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: OFFSITES } })
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'How far ahead must an offsite budget be approved, and who approves it?', agents: ['researcher', 'writer', 'critic'] } })
    expect(res.json.finalSynthesis).toMatch(/^From the (researcher|writer): /)
    expect(res.json.finalSynthesis).toContain('six weeks before the trip')
    expect(res.json.finalSynthesis).toContain('Sources: [1] Team offsites.')
    expect(res.json.confidence).toBeGreaterThan(0)
  }, 60_000)
})
