import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { recognizerInstalled } from '../../../src/ml/speech/recognizer'
import { fetchAudio, makeVoiceServer, wordErrorRate } from './helpers'

setDefaultTimeout(120_000)
const server = makeVoiceServer()
const listener = server.app.listen({ port: 0 })
afterAll(() => {
  listener.stop(true)
  server.cleanup()
})
const installed = recognizerInstalled()
if (!installed) console.log('skipping speech recognition tests: pocketsphinx is not installed (apt-get install -y pocketsphinx pocketsphinx-en-us)')
const withRecognizer = installed ? test : test.skip

async function speak(token: string, text: string, format = 'wav') {
  const res = await server.call('POST', '/voice/tts', { token, body: { text, voice: 'default', language: 'en-US', speed: 1, format } })
  return (await fetchAudio(server.app, res.json.audioUrl, token)).bytes
}

/** The same speech as 44.1 kHz stereo 16-bit WAV, to check resampling and mixing. */
function toStereo44k(wav: Uint8Array): Uint8Array {
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength)
  const rate = view.getUint32(24, true)
  const mono = new Int16Array(wav.slice(44).buffer)
  const frames = Math.floor((mono.length * 44100) / rate)
  const out = new Uint8Array(44 + frames * 4)
  const o = new DataView(out.buffer)
  out.set(wav.subarray(0, 44))
  o.setUint32(4, 36 + frames * 4, true)
  o.setUint16(22, 2, true)
  o.setUint32(24, 44100, true)
  o.setUint32(28, 44100 * 4, true)
  o.setUint16(32, 4, true)
  o.setUint32(40, frames * 4, true)
  for (let i = 0; i < frames; i++) {
    const s = mono[Math.min(mono.length - 1, Math.floor((i * rate) / 44100))]!
    o.setInt16(44 + i * 4, s, true)
    o.setInt16(46 + i * 4, s, true)
  }
  return out
}

/** A real WebSocket client with a patient inbox. */
async function connect(port: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`)
  const inbox: any[] = []
  socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
  await new Promise((resolve, reject) => {
    socket.onopen = resolve
    socket.onerror = reject
  })
  async function next(predicate: (m: any) => boolean) {
    for (let waited = 0; waited < 100_000; waited += 25) {
      const index = inbox.findIndex(predicate)
      if (index >= 0) return inbox.splice(index, 1)[0]
      await Bun.sleep(25)
    }
    throw new Error('no matching message')
  }
  return { socket, next, send: (message: unknown) => socket.send(JSON.stringify(message)) }
}

describe('POST /voice/transcribe', () => {
  withRecognizer('WAV (any rate and channels), MP3 and Ogg, as base64 JSON and as multipart; words carry times', async () => {
    const { accessToken } = await server.login()
    const wav = await speak(accessToken, 'search my documents for backups')
    const json = await server.call('POST', '/voice/transcribe', { token: accessToken, body: { audio: Buffer.from(wav).toString('base64') } })
    expect(json.status).toBe(200)
    expect(json.json).toMatchObject({ text: 'search my documents for backups', mode: 'commands' })
    expect(json.json.confidence).toBeGreaterThan(0)
    expect(json.json.confidence).toBeLessThanOrEqual(1)
    expect(json.json.duration).toBeGreaterThan(1)
    expect(json.json.words.map((w: any) => w.word)).toEqual(['search', 'my', 'documents', 'for', 'backups'])
    for (const w of json.json.words) expect(w.end).toBeGreaterThan(w.start)

    const form = new FormData()
    form.set('audio', new File([toStereo44k(wav) as BlobPart], 'command.wav', { type: 'audio/wav' }))
    form.set('mode', 'commands')
    const multipart = await server.app.handle(new Request('http://localhost/voice/transcribe', { method: 'POST', headers: { authorization: `Bearer ${accessToken}` }, body: form }))
    expect(multipart.status).toBe(200)
    expect(((await multipart.json()) as any).text).toBe('search my documents for backups')

    for (const format of ['mp3', 'ogg']) {
      const bytes = await speak(accessToken, 'what time is it', format)
      const res = await server.call('POST', '/voice/transcribe', { token: accessToken, body: { audio: Buffer.from(bytes).toString('base64') } })
      expect([format, res.json.text]).toEqual([format, 'what time is it'])
    }
    const dictation = await server.call('POST', '/voice/transcribe', { token: accessToken, body: { audio: Buffer.from(wav).toString('base64'), mode: 'dictation' } })
    expect(dictation.status).toBe(200)
    expect(dictation.json.mode).toBe('dictation')
    expect(dictation.json.text).toBeString()
  })

  test('400 for audio it cannot read, bad base64 and a bad mode; 413 over the size limit; 503 naming the install line without the model', async () => {
    const { accessToken } = await server.login()
    for (const audio of [Buffer.from('RIFF....WAVEjunk').toString('base64'), Buffer.from('plain text, not audio').toString('base64'), '!!!notbase64!!!']) {
      const res = await server.call('POST', '/voice/transcribe', { token: accessToken, body: { audio } })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain('audio')
    }
    expect((await server.call('POST', '/voice/transcribe', { token: accessToken, body: { audio: 'AAAA', mode: 'shout' } })).status).toBe(400)
    const small = makeVoiceServer({ maxRequestSize: '64kb', maxRequestBytes: 64 * 1024 })
    try {
      const token = (await small.login()).accessToken
      const big = await small.call('POST', '/voice/transcribe', { token, body: { audio: Buffer.alloc(100_000).toString('base64') } })
      expect(big.status).toBe(413)
      expect(big.json.code).toBe('PAYLOAD_TOO_LARGE')
    } finally {
      small.cleanup()
    }
    const missing = makeVoiceServer({ speechModelDir: '/nonexistent/pocketsphinx' })
    try {
      const token = (await missing.login()).accessToken
      const wav = await speak(accessToken, 'what time is it')
      const res = await missing.call('POST', '/voice/transcribe', { token, body: { audio: Buffer.from(wav).toString('base64') } })
      expect(res.status).toBe(503)
      expect(res.json.code).toBe('MODEL_UNAVAILABLE')
      expect(res.json.message).toContain('apt-get install -y pocketsphinx pocketsphinx-en-us')
    } finally {
      missing.cleanup()
    }
  })
})

describe('spoken commands', () => {
  const COMMANDS: [string, string][] = [
    ['what time is it', 'time'],
    ['search my documents for backups', 'rag_search'],
    ['start autopilot', 'autopilot_start'],
    ['stop autopilot', 'autopilot_stop'],
    ['what is seventeen plus twenty five', 'plugin_execute'],
    ['how is the server doing', 'system_status'],
    ['ask the researcher to study solar power', 'agent_task'],
    ['say good morning everyone', 'tts'],
    ['tell me a joke', 'chat'],
    ['what do my notes say about the vacation policy', 'rag_answer'],
  ]

  withRecognizer('round trip: TTS of 10 commands heard back in commands mode, WER <= 35% and 8 of 10 intents from audio alone', async () => {
    const { accessToken } = await server.login()
    let errors = 0
    let words = 0
    let intents = 0
    for (const [text, intent] of COMMANDS) {
      const wav = await speak(accessToken, text)
      const res = await server.call('POST', '/voice/command', { token: accessToken, body: { audio: Buffer.from(wav).toString('base64') } })
      expect(res.status).toBe(200)
      expect(res.json.transcript.mode).toBe('commands')
      expect(res.json.command).toBe(res.json.transcript.text)
      const n = text.split(' ').length
      errors += wordErrorRate(text, res.json.transcript.text) * n
      words += n
      if (res.json.intent === intent) intents++
      else console.log(`heard "${res.json.transcript.text}" for "${text}": ${res.json.intent}`)
    }
    console.log(`round trip: WER ${((errors / words) * 100).toFixed(1)}%, ${intents}/10 intents`)
    expect(errors / words).toBeLessThanOrEqual(0.35)
    expect(intents).toBeGreaterThanOrEqual(8)
  })

  test('WebSocket voice_command with text answers chat_response with the VoiceCommandResponse; bad input is an error and the socket stays open', async () => {
    const { accessToken } = await server.login()
    const client = await connect(listener.server!.port!)
    client.send({ type: 'auth', token: accessToken })
    await client.next((m) => m.type === 'auth_success')
    client.send({ type: 'voice_command', command: 'what is seventeen plus twenty five', id: 'v1' })
    const reply = await client.next((m) => m.id === 'v1')
    expect(reply.type).toBe('chat_response')
    expect(reply.data).toMatchObject({ success: true, intent: 'plugin_execute', action: 'plugins.execute:calculator' })
    expect(reply.data.entities).toEqual(expect.arrayContaining(['number:17', 'number:25']))
    expect(reply.data.audioResponse).toMatch(/^\/voice\/audio\//)
    client.send({ type: 'voice_command', command: '', id: 'v2' })
    expect(await client.next((m) => m.id === 'v2')).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    client.send({ type: 'voice_command', audio: Buffer.from('not audio').toString('base64'), id: 'v3' })
    expect(await client.next((m) => m.id === 'v3')).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    expect(client.socket.readyState).toBe(WebSocket.OPEN)
    client.socket.close()
  })

  withRecognizer('WebSocket voice_command with audio: transcribed, then handled as text', async () => {
    const { accessToken } = await server.login()
    const client = await connect(listener.server!.port!)
    client.send({ type: 'auth', token: accessToken })
    await client.next((m) => m.type === 'auth_success')
    const wav = await speak(accessToken, 'what time is it')
    client.send({ type: 'voice_command', audio: Buffer.from(wav).toString('base64'), id: 'a1' })
    const reply = await client.next((m) => m.id === 'a1')
    expect(reply.type).toBe('chat_response')
    expect(reply.data).toMatchObject({ command: 'what time is it', intent: 'time', action: 'system.time', transcript: { text: 'what time is it', mode: 'commands' } })
    client.socket.close()
  })
})
