import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { AudioStore } from '../../../src/modules/voice/audio-store'
import { AutopilotStore } from '../../../src/modules/voice/autopilot'
import type { VoiceStore } from '../../../src/modules/voice/store'
import { PostgresVoiceStore } from '../../../src/modules/voice/store.postgres'
import { SqliteVoiceStore } from '../../../src/modules/voice/store.sqlite'
import { makeServer, tempDir } from '../../helpers'
import { describeBackends, freshPostgres, deleteTestUser, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../../postgres'
import { twoServers } from '../../two-servers'

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

  test('audio made in one audio folder is served from another (an empty one) when the store keeps the bytes; retention applies to both', async () => {
    const { store, user } = voiceOf(backend())
    const owner = await user()
    const here = new AudioStore(store, tempDir('voice-here'), 3600_000)
    const there = new AudioStore(store, tempDir('voice-there'), 3600_000)
    const bytes = new Uint8Array([82, 73, 70, 70, 0, 255, 7, 1])
    const { id, path } = here.reserve('wav')
    await Bun.write(path, bytes)
    await here.record({ id, user_id: owner, format: 'wav', size: bytes.length, duration: 0.5 })
    const found = await there.find(owner, `${id}.wav`)
    if (backend().kind === 'postgres') {
      expect(store.keepsAudioBytes).toBe(true)
      expect(found).toMatchObject({ id, user_id: owner, size: bytes.length, path: there.pathOf(id, 'wav') })
      expect(new Uint8Array(await Bun.file(found!.path).arrayBuffer())).toEqual(bytes)
      expect(await there.find(await user(), `${id}.wav`)).toBeNull()
    } else {
      // SQLite: the bytes are only the file in the folder they were written to.
      expect(store.keepsAudioBytes).toBe(false)
      expect(found).toBeNull()
    }
    expect(await here.sweep(Date.now() + 2 * 3600_000)).toBe(1)
    expect(await there.find(owner, `${id}.wav`)).toBeNull()
    expect(await store.audioBytes(id)).toBeNull()
  })

  test('audio recorded without its bytes (moved from SQLite) is stored from the folder that has its file, then served from another', async () => {
    const { store, user } = voiceOf(backend())
    const owner = await user()
    const here = new AudioStore(store, tempDir('voice-moved'), 3600_000)
    const there = new AudioStore(store, tempDir('voice-elsewhere'), 3600_000)
    const bytes = new Uint8Array([79, 103, 103, 83, 1, 2, 3])
    const { id, path } = here.reserve('ogg')
    await Bun.write(path, bytes)
    // As migrate-to-postgres leaves it: the record without the bytes.
    await store.recordAudio({ id, user_id: owner, format: 'ogg', size: bytes.length, duration: 0.1, created_at: new Date().toISOString() })
    expect(await there.find(owner, `${id}.ogg`)).toBeNull()
    if (backend().kind === 'postgres') {
      expect(await here.storeLocalFiles()).toBe(1)
      expect(await here.storeLocalFiles()).toBe(0)
      expect(await there.storeLocalFiles()).toBe(0)
      const found = await there.find(owner, `${id}.ogg`)
      expect(new Uint8Array(await Bun.file(found!.path).arrayBuffer())).toEqual(bytes)
    } else {
      expect(await here.storeLocalFiles()).toBe(0)
    }
  })

  test('autopilot: start merges preferences and keeps a running session; stop; one session per user; gone with its user', async () => {
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
    await deleteTestUser(backend(), owner)
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

describe.skipIf(!TEST_DATABASE_URL)(`voice audio on two servers sharing PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  const closers: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const close of closers) await close()
  })
  test('audio synthesized on A is fetched from B (empty data dir) by its owner alone, with ranges; once past retention neither serves it', async () => {
    const { a, b, close } = await twoServers({ audioRetentionMs: 3600_000 })
    closers.push(close)
    const userA = await a.userSession('speaker@example.com')
    const userB = await b.login('speaker@example.com', 'user-password-1')
    expect(userB.user.id).toBe(userA.user.id)
    const tts = await a.call('POST', '/voice/tts', { token: userA.accessToken, body: { text: 'Made on the first server', voice: 'default', language: 'en-US', speed: 1, format: 'wav' } })
    expect(tts.status).toBe(200)
    const fromA = await a.app.handle(new Request(`http://localhost${tts.json.audioUrl}`, { headers: { authorization: `Bearer ${userA.accessToken}` } }))
    const original = new Uint8Array(await fromA.arrayBuffer())
    expect(original.length).toBe(tts.json.size)

    const fromB = await b.app.handle(new Request(`http://localhost${tts.json.audioUrl}`, { headers: { authorization: `Bearer ${userB.accessToken}` } }))
    expect(fromB.status).toBe(200)
    expect(fromB.headers.get('content-type')).toBe('audio/wav')
    expect(new Uint8Array(await fromB.arrayBuffer())).toEqual(original)
    const ranged = await b.app.handle(new Request(`http://localhost${tts.json.audioUrl}`, { headers: { authorization: `Bearer ${userB.accessToken}`, range: 'bytes=0-3' } }))
    expect(ranged.status).toBe(206)
    expect(new TextDecoder().decode(await ranged.arrayBuffer())).toBe('RIFF')
    const adminB = await b.login()
    expect((await b.call('GET', tts.json.audioUrl, { token: adminB.accessToken })).status).toBe(404)

    // Retention: swept by either server, the audio is gone from both (B's copy included).
    expect(await b.services.speech.audio.sweep(Date.now() + 2 * 3600_000)).toBeGreaterThanOrEqual(1)
    expect((await a.call('GET', tts.json.audioUrl, { token: userA.accessToken })).status).toBe(404)
    expect((await b.call('GET', tts.json.audioUrl, { token: userB.accessToken })).status).toBe(404)
  })
})
