import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { fetchAudio, makeVoiceServer } from './helpers'

setDefaultTimeout(60_000)
const server = makeVoiceServer()
afterAll(() => server.cleanup())

const DOCS = [
  { id: 'backups.md', content: 'Backups run every night at 02:00 and are kept for 35 days on the second disk.', metadata: { title: 'Backup policy' } },
  { id: 'vacation.md', content: 'Every employee gets 25 vacation days a year; ask your manager two weeks ahead.', metadata: { title: 'Vacation' } },
  { id: 'printing.md', content: 'Release print jobs with your badge at any printer on the third floor.', metadata: { title: 'Printing' } },
]

async function command(token: string, body: Record<string, unknown>) {
  return server.call('POST', '/voice/command', { token, body })
}

describe('POST /voice/command', () => {
  test('intent, entities, action and a spoken reply; without the autopilot the action is only proposed', async () => {
    const { accessToken } = await server.login()
    await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection: 'docs', documents: DOCS } })
    const search = await command(accessToken, { command: 'search docs for backups' })
    expect(search.status).toBe(200)
    expect(search.json).toMatchObject({ success: true, command: 'search docs for backups', intent: 'rag_search', action: 'rag.search', executed: false })
    expect(search.json.entities).toContain('collection:docs')
    expect(search.json.response).toContain('backups')
    expect(search.json.audioResponse).toMatch(/^\/voice\/audio\/[0-9a-f-]{36}\.mp3$/)
    const audio = await fetchAudio(server.app, search.json.audioResponse, accessToken)
    expect(audio.response.status).toBe(200)
    expect(audio.bytes[0]).toBe(0xff)

    const calc = await command(accessToken, { command: 'what is seventeen plus twenty five' })
    expect(calc.json).toMatchObject({ intent: 'plugin_execute', action: 'plugins.execute:calculator' })
    expect(calc.json.entities).toEqual(expect.arrayContaining(['number:17', 'number:25', 'plugin:calculator']))
    expect(calc.json.response).not.toContain('42')

    const expected: Record<string, [string, string]> = {
      'what time is it': ['time', 'system.time'],
      'how is the server doing': ['system_status', 'system.health'],
      'turn on autopilot': ['autopilot_start', 'voice.autopilot:start'],
      'say good morning everyone': ['tts', 'voice.tts'],
      'ask the researcher to study solar power': ['agent_task', 'agents.execute'],
      'blah blah blah': ['unknown', 'none'],
    }
    for (const [text, [intent, action]] of Object.entries(expected)) {
      const res = await command(accessToken, { command: text })
      expect([text, res.json.intent, res.json.action]).toEqual([text, intent, action])
    }
  })

  test('400 for a missing or blank command, and unreadable audio; 403 for another userId (non-admin)', async () => {
    const { accessToken } = await server.login()
    expect((await command(accessToken, {})).status).toBe(400)
    const blank = await command(accessToken, { command: '   ' })
    expect(blank.status).toBe(400)
    expect(blank.json.message).toContain('command')
    const garbage = await command(accessToken, { audio: Buffer.from('this is not audio at all').toString('base64') })
    expect(garbage.status).toBe(400)
    expect(garbage.json.message).toContain('audio')
    const user = await server.userSession('commander@example.com')
    const other = await command(user.accessToken, { command: 'what time is it', userId: (await server.login()).user.id })
    expect(other.status).toBe(403)
  })
})

describe('POST /voice/autopilot', () => {
  test('status inactive before any start; start is active and keeps its session; stop; one session per user', async () => {
    const user = await server.userSession('pilot@example.com')
    const status0 = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'status' } })
    expect(status0.json).toMatchObject({ success: true, mode: 'status', status: 'inactive' })
    const stop0 = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'stop' } })
    expect(stop0.json).toMatchObject({ mode: 'stop', status: 'inactive' })
    const start = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'start', preferences: { verbosity: 'low', autoExecute: true } } })
    expect(start.status).toBe(200)
    expect(start.json).toMatchObject({ success: true, mode: 'start', status: 'active' })
    expect(start.json.sessionId).toMatch(/^[0-9a-f-]{36}$/)
    expect(start.json.capabilities).toEqual(expect.arrayContaining(['rag_search', 'plugin_execute', 'agent_task', 'time', 'system_status']))
    const again = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'start' } })
    expect(again.json.sessionId).toBe(start.json.sessionId)
    expect(again.json.preferences).toMatchObject({ verbosity: 'low', autoExecute: true })
    const admin = await server.login()
    const adminStatus = await server.call('POST', '/voice/autopilot', { token: admin.accessToken, body: { mode: 'status' } })
    expect(adminStatus.json.sessionId).not.toBe(start.json.sessionId)
    const stop = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'stop' } })
    expect(stop.json).toMatchObject({ mode: 'stop', status: 'stopped', sessionId: start.json.sessionId })
    const status = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'status' } })
    expect(status.json.status).toBe('stopped')
    const bad = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'fly' } })
    expect(bad.status).toBe(400)
    const voice = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'start', preferences: { voice: 'nobody' } } })
    expect(voice.json.code).toBe('UNKNOWN_VOICE')
  })

  test('with autoExecute: a search returns real results, a calculation the right value, time in the user zone, an agent task its id', async () => {
    const user = await server.userSession('doer@example.com')
    const token = user.accessToken
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: DOCS } })
    await server.call('POST', '/voice/autopilot', { token, body: { mode: 'start', preferences: { autoExecute: true, verbosity: 'medium', timezone: 'Asia/Tokyo' } } })

    const search = await command(token, { command: 'search my documents for backups' })
    expect(search.json).toMatchObject({ intent: 'rag_search', executed: true })
    expect(search.json.result.results[0].id).toBe('backups.md')
    expect(search.json.response).toContain('backups.md')

    const calc = await command(token, { command: 'what is seventeen plus twenty five' })
    expect(calc.json).toMatchObject({ intent: 'plugin_execute', executed: true, success: true })
    expect(calc.json.result).toEqual({ value: 42 })
    expect(calc.json.response).toContain('42')
    const calc2 = await command(token, { command: 'calculate 12 times 8' })
    expect(calc2.json.response).toContain('96')

    const time = await command(token, { command: 'what time is it' })
    const tokyo = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', hour: 'numeric' }).format(new Date())
    expect(time.json.response).toContain('Asia/Tokyo')
    expect(time.json.response).toContain(tokyo.split(' ')[0]!)

    const agents = await command(token, { command: 'ask the researcher to study backups' })
    expect(agents.json).toMatchObject({ intent: 'agent_task', executed: true })
    const taskId = agents.json.result.taskId
    expect(agents.json.response).toContain(taskId)
    const task = await server.call('GET', `/agents/task/${taskId}`, { token })
    expect(task.status).toBe(200)

    const other = await server.userSession('bystander@example.com')
    const notMine = await command(other.accessToken, { command: 'what is seventeen plus twenty five' })
    expect(notMine.json.executed).toBe(false)
  })
})
