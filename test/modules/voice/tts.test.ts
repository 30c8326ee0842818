import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { MPEGDecoder } from 'mpg123-decoder'
import { existsSync, utimesSync, writeFileSync } from 'node:fs'
import { fetchAudio, makeVoiceServer } from './helpers'

setDefaultTimeout(60_000)
const server = makeVoiceServer()
afterAll(() => server.cleanup())
const TEXT = 'The backup finished at noon. Every file was copied to the second disk.'

async function tts(token: string, body: Record<string, unknown>) {
  return server.call('POST', '/voice/tts', { token, body: { text: TEXT, voice: 'default', language: 'en-US', speed: 1, format: 'wav', ...body } })
}

/** Vorbis duration: the last page's granule position over the rate in the identification header. */
function oggDuration(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const rate = view.getUint32(28 + 12, true)
  let last = -1
  for (let i = bytes.length - 4; i >= 0; i--) {
    if (bytes[i] === 0x4f && bytes[i + 1] === 0x67 && bytes[i + 2] === 0x67 && bytes[i + 3] === 0x53) {
      last = i
      break
    }
  }
  return Number(view.getBigUint64(last + 6, true)) / rate
}

describe('POST /voice/tts', () => {
  test('wav, mp3 and ogg bytes are really those formats, with the stated size and a duration within 10%', async () => {
    const { accessToken } = await server.login()
    for (const format of ['wav', 'mp3', 'ogg'] as const) {
      const res = await tts(accessToken, { format })
      expect(res.status).toBe(200)
      expect(res.json).toMatchObject({ success: true, format })
      expect(res.json.audioUrl).toMatch(new RegExp(`^/voice/audio/[0-9a-f-]{36}\\.${format}$`))
      const { response, bytes } = await fetchAudio(server.app, res.json.audioUrl, accessToken)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe({ wav: 'audio/wav', mp3: 'audio/mpeg', ogg: 'audio/ogg' }[format])
      expect(Number(response.headers.get('content-length'))).toBe(bytes.length)
      expect(bytes.length).toBe(res.json.size)
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      let measured: number
      if (format === 'wav') {
        expect(String.fromCharCode(...bytes.subarray(0, 4))).toBe('RIFF')
        expect(String.fromCharCode(...bytes.subarray(8, 12))).toBe('WAVE')
        measured = view.getUint32(40, true) / 2 / view.getUint32(24, true)
      } else if (format === 'mp3') {
        expect(bytes[0]).toBe(0xff)
        expect(bytes[1]! & 0xe0).toBe(0xe0)
        const decoder = new MPEGDecoder()
        await decoder.ready
        const decoded = decoder.decode(bytes)
        decoder.free()
        measured = decoded.samplesDecoded / decoded.sampleRate
      } else {
        expect(String.fromCharCode(...bytes.subarray(0, 4))).toBe('OggS')
        measured = oggDuration(bytes)
      }
      expect(res.json.duration).toBeGreaterThan(2)
      expect(Math.abs(measured - res.json.duration) / res.json.duration).toBeLessThan(0.1)
    }
  })

  test('speed 2.0 makes shorter audio than 1.0, and 0.25 longer', async () => {
    const { accessToken } = await server.login()
    const normal = (await tts(accessToken, { speed: 1 })).json.duration
    const fast = (await tts(accessToken, { speed: 2 })).json.duration
    const slow = (await tts(accessToken, { speed: 0.25, text: 'Slowly now.' })).json.duration
    const slowNormal = (await tts(accessToken, { speed: 1, text: 'Slowly now.' })).json.duration
    expect(fast).toBeLessThan(normal * 0.75)
    expect(slow).toBeGreaterThan(slowNormal * 2.5)
  })

  test('a range request returns 206 with exactly those bytes; an unsatisfiable one 416', async () => {
    const { accessToken } = await server.login()
    const { audioUrl } = (await tts(accessToken, { format: 'mp3' })).json
    const whole = (await fetchAudio(server.app, audioUrl, accessToken)).bytes
    const part = await fetchAudio(server.app, audioUrl, accessToken, { range: 'bytes=100-299' })
    expect(part.response.status).toBe(206)
    expect(part.response.headers.get('content-range')).toBe(`bytes 100-299/${whole.length}`)
    expect(part.response.headers.get('content-length')).toBe('200')
    expect(part.bytes).toEqual(whole.subarray(100, 300))
    const tail = await fetchAudio(server.app, audioUrl, accessToken, { range: 'bytes=-50' })
    expect(tail.response.status).toBe(206)
    expect(tail.bytes).toEqual(whole.subarray(whole.length - 50))
    const open = await fetchAudio(server.app, audioUrl, accessToken, { range: `bytes=${whole.length - 10}-` })
    expect(open.bytes).toEqual(whole.subarray(whole.length - 10))
    const beyond = await fetchAudio(server.app, audioUrl, accessToken, { range: `bytes=${whole.length}-` })
    expect(beyond.response.status).toBe(416)
    expect(beyond.response.headers.get('content-range')).toBe(`bytes */${whole.length}`)
  })

  test('audio is served to its owner only; other users, unknown ids and ../ paths get 404', async () => {
    const { accessToken } = await server.login()
    const { audioUrl } = (await tts(accessToken, {})).json
    const other = await server.userSession('listener@example.com')
    expect((await fetchAudio(server.app, audioUrl, other.accessToken)).response.status).toBe(404)
    for (const path of ['/voice/audio/..%2F..%2Fuagent.db', '/voice/audio/..%2Fx.wav', '/voice/audio/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', `/voice/audio/${crypto.randomUUID()}.wav`, audioUrl.replace('.wav', '.mp3')]) {
      const res = await server.call('GET', path, { token: accessToken })
      expect(res.status).toBe(404)
      expect(res.json.code).toBe('NOT_FOUND')
    }
    expect((await server.call('GET', audioUrl)).status).toBe(401)
  })

  test('400 for empty text, speed 0 or 5, format flac, a missing field; UNKNOWN_VOICE for an unknown voice', async () => {
    const { accessToken } = await server.login()
    for (const [body, field] of [
      [{ text: '' }, 'text'],
      [{ text: '   ' }, 'text'],
      [{ speed: 0 }, 'speed'],
      [{ speed: 5 }, 'speed'],
      [{ format: 'flac' }, 'format'],
      [{ text: 'x'.repeat(5001) }, 'text'],
    ] as const) {
      const res = await tts(accessToken, body)
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain(field)
    }
    const missing = await server.call('POST', '/voice/tts', { token: accessToken, body: { text: 'hi', voice: 'default', speed: 1, format: 'mp3' } })
    expect(missing.status).toBe(400)
    expect(missing.json.message).toContain('language')
    const unknown = await tts(accessToken, { voice: 'no-such-voice' })
    expect(unknown.status).toBe(400)
    expect(unknown.json.code).toBe('UNKNOWN_VOICE')
  })

  test('GET /voice/voices lists the engine voices; each listed id and a +variant synthesize', async () => {
    const { accessToken } = await server.login()
    const res = await server.call('GET', '/voice/voices', { token: accessToken })
    expect(res.status).toBe(200)
    expect(res.json.voices.length).toBeGreaterThan(50)
    expect(res.json.voices).toContainEqual({ id: 'en-us', name: 'English (America)', language: 'en-US' })
    const french = res.json.voices.find((v: any) => v.id === 'fr')
    expect(french.language).toMatch(/^fr/)
    const spoken = await tts(accessToken, { voice: 'fr', language: french.language, text: 'Bonjour tout le monde.' })
    expect(spoken.status).toBe(200)
    expect((await tts(accessToken, { voice: 'en-us+f2' })).status).toBe(200)
  })

  test('long texts are synthesized piece by piece into one file', async () => {
    const { accessToken } = await server.login()
    const text = 'This sentence is one of many in a long text. '.repeat(30)
    const res = await tts(accessToken, { text, format: 'ogg' })
    expect(res.status).toBe(200)
    expect(res.json.duration).toBeGreaterThan(60)
  }, 60_000)

  test('audio past the retention is removed: file and record', async () => {
    const { accessToken } = await server.login()
    const { audioUrl } = (await tts(accessToken, {})).json
    // A file left without its record (its user was deleted) goes by age too.
    const orphan = `${server.audioDir}/${crypto.randomUUID()}.mp3`
    writeFileSync(orphan, 'old audio')
    utimesSync(orphan, new Date(Date.now() - 48 * 3600_000), new Date(Date.now() - 48 * 3600_000))
    const kept = `${server.audioDir}/notes.txt`
    writeFileSync(kept, 'not audio')
    const removed = server.services.speech.audio.sweep(Date.now() + 25 * 3600_000)
    expect(existsSync(orphan)).toBe(false)
    expect(existsSync(kept)).toBe(true)
    expect(removed).toBeGreaterThan(0)
    expect((await fetchAudio(server.app, audioUrl, accessToken)).response.status).toBe(404)
    const file = audioUrl.split('/').pop()!
    expect(await Bun.file(`${server.audioDir}/${file}`).exists()).toBe(false)
  })
})
