import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import reference from '../../fixtures/tts-reference.json'
import { audioDigest } from '../../../scripts/tts-reference'
import { fetchAudio, makeVoiceServer } from './helpers'

setDefaultTimeout(120_000)
const server = makeVoiceServer()
afterAll(() => server.cleanup())

// The reference is what main's synthesizeToFile made on the request thread before speech moved to
// the work pool (`bun scripts/tts-reference.ts <main checkout>`): the pool must not change a byte.
test('POST /voice/tts makes on the work pool the same bytes main made on the request thread, for every format, speed and each of the 106 voices', async () => {
  const { accessToken } = await server.login()
  expect(reference.length).toBe(12 + 106)
  for (const expected of reference) {
    const { text, voice, language, speed, format } = expected
    const res = await server.call('POST', '/voice/tts', { token: accessToken, body: { text, voice, language, speed, format } })
    expect(res.status).toBe(200)
    expect(res.json.size).toBe(expected.bytes)
    const { bytes } = await fetchAudio(server.app, res.json.audioUrl, accessToken)
    expect({ case: `${format} ${voice} ${speed}`, sha256: audioDigest(bytes, format) }).toEqual({ case: `${format} ${voice} ${speed}`, sha256: expected.sha256 })
  }
  // Every one of them was synthesized by a worker of the pool.
  expect(server.services.pool.state()).toMatchObject({ completed: reference.length, failed: 0, crashed: 0 })
})
