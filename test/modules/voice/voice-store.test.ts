import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { AudioStore } from '../../../src/modules/voice/audio-store'
import { AutopilotStore } from '../../../src/modules/voice/autopilot'
import type { VoiceStore } from '../../../src/modules/voice/store'
import { PostgresVoiceStore } from '../../../src/modules/voice/store.postgres'
import { SqliteVoiceStore } from '../../../src/modules/voice/store.sqlite'
import { makeServer, tempDir } from '../../helpers'
import { describeBackends, freshPostgres, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../../postgres'

function voiceOf(backend: TestBackend): { store: VoiceStore; user(): Promise<string> } {
  const user = () => insertTestUser(backend)
  return { store: backend.kind === 'postgres' ? new PostgresVoiceStore(backend.sql) : new SqliteVoiceStore(backend.db), user }
}

describeBackends('voice store', (backend) => {
  test('audio: recorded, found by its owner alone while its file is there, swept with its file once old', async () => {
    const { store, user } = voiceOf(backend())
    const owner = await user()
    const audio = new AudioStore(store, tempDir('voice-store'), 3600_000)
    const { id, path } = audio.reserve('wav')
    await Bun.write(path, new Uint8Array([82, 73, 70, 70]))
    await audio.record({ id, user_id: owner, format: 'wav', size: 4, duration: 0.25 })
    expect(await audio.find(owner, `${id}.wav`)).toMatchObject({ id, user_id: owner, format: 'wav', size: 4, duration: 0.25, path })
    expect(await audio.find(await user(), `${id}.wav`)).toBeNull()
    expect(await audio.find(owner, `${id}.mp3`)).toBeNull()
    expect(await audio.find(owner, '../etc/passwd')).toBeNull()
    expect(await audio.sweep(Date.now())).toBe(0)
    expect(await audio.sweep(Date.now() + 2 * 3600_000)).toBe(1)
    expect(await audio.find(owner, `${id}.wav`)).toBeNull()
    expect(await Bun.file(path).exists()).toBe(false)
  })

  test('autopilot: start merges preferences and keeps a running session; stop; one session per user; deleteAllOf', async () => {
    const { store, user } = voiceOf(backend())
    const pilot = new AutopilotStore(store)
    const owner = await user()
    expect(await pilot.get(owner)).toBeNull()
    expect(await pilot.stop(owner)).toBeNull()
    const started = await pilot.start(owner, 'driving', { verbosity: 'low', autoExecute: true, speed: 1.25 })
    expect(started).toMatchObject({ status: 'active', context: 'driving', verbosity: 'low', autoExecute: true, voice: 'default', speed: 1.25, timezone: null })
    const again = await pilot.start(owner, undefined, { timezone: 'Asia/Tokyo' })
    expect(again).toMatchObject({ sessionId: started.sessionId, context: 'driving', verbosity: 'low', autoExecute: true, timezone: 'Asia/Tokyo' })
    expect(await pilot.stop(owner)).toMatchObject({ sessionId: started.sessionId, status: 'stopped' })
    const anew = await pilot.start(owner, null, {})
    expect(anew.sessionId).not.toBe(started.sessionId)
    expect(anew).toMatchObject({ context: null, autoExecute: true })
    const other = await user()
    expect((await pilot.start(other, undefined, {})).autoExecute).toBe(false)
    await store.deleteAllOf(owner)
    expect(await pilot.get(owner)).toBeNull()
    expect(await pilot.get(other)).not.toBeNull()
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`voice over HTTP on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('synthesized audio is recorded in PostgreSQL and served to its owner alone; the autopilot lives there too', async () => {
    const postgres = await freshPostgres()
    const server = makeServer({ postgres, audioDir: tempDir('voice-pg') })
    const user = await server.userSession('voice@example.com')
    const admin = await server.login()
    const tts = await server.call('POST', '/voice/tts', { token: user.accessToken, body: { text: 'Hello from PostgreSQL', voice: 'default', language: 'en-US', speed: 1, format: 'wav' } })
    expect(tts.status).toBe(200)
    const file = tts.json.audioUrl.split('/').at(-1)
    const rows: { user_id: string; size: number }[] = await postgres`SELECT user_id, size FROM voice_audio`
    expect(rows).toEqual([{ user_id: user.user.id, size: tts.json.size }])
    expect(server.services.db.query('SELECT count(*) AS n FROM voice_audio').get()).toEqual({ n: 0 })
    const audio = await server.app.handle(new Request(`http://localhost${tts.json.audioUrl}`, { headers: { authorization: `Bearer ${user.accessToken}` } }))
    expect(audio.status).toBe(200)
    expect(new TextDecoder().decode((await audio.arrayBuffer()).slice(0, 4))).toBe('RIFF')
    expect((await server.call('GET', `/voice/audio/${file}`, { token: admin.accessToken })).status).toBe(404)

    const start = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'start', preferences: { verbosity: 'high', autoExecute: true } } })
    expect(start.json).toMatchObject({ status: 'active', preferences: { verbosity: 'high' } })
    const stored: { status: string; verbosity: string }[] = await postgres`SELECT status, verbosity FROM voice_autopilot WHERE user_id = ${user.user.id}`
    expect(stored).toEqual([{ status: 'active', verbosity: 'high' }])
    const spoken = await server.call('POST', '/voice/command', { token: user.accessToken, body: { command: 'turn off the autopilot' } })
    expect(spoken.status).toBe(200)
    const status = await server.call('POST', '/voice/autopilot', { token: user.accessToken, body: { mode: 'status' } })
    expect(status.json.status).toBe('stopped')
  })
})
