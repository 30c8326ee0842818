import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { recognizerInstalled } from '../../src/ml/speech/recognizer'
import { tempDir } from '../temp'
import { makeVoiceServer } from '../modules/voice/helpers'
import { liveServer } from './live-server'

setDefaultTimeout(120_000)
if (!recognizerInstalled()) console.log('skipping uagent voice transcribe: pocketsphinx is not installed (apt-get install -y pocketsphinx pocketsphinx-en-us)')
const server = makeVoiceServer({ jwtSecret: 'v'.repeat(48) })
const files = tempDir('cli-audio')
const { run } = liveServer(server.app, { login: true, cleanup: () => server.cleanup() })

describe('uagent voice', () => {
  test('tts -o saves real audio in the format of the extension (or --format); --json prints the API body', async () => {
    const mp3 = join(files, 'out.mp3')
    const saved = await run(['voice', 'tts', 'The', 'build', 'passed', '-o', mp3])
    expect(saved.code).toBe(0)
    expect(saved.stdout).toMatch(/^Saved \d+ bytes of mp3 \([\d.]+ s\) to /)
    const bytes = readFileSync(mp3)
    expect(bytes[0]).toBe(0xff)
    const wav = join(files, 'out.wav')
    const json = await run(['--json', 'voice', 'tts', 'Hello there', '-o', wav, '--speed', '1.2', '--voice', 'en-us'])
    const body = JSON.parse(json.stdout)
    expect(body).toMatchObject({ success: true, format: 'wav' })
    expect(readFileSync(wav).subarray(0, 4).toString()).toBe('RIFF')
    expect(readFileSync(wav).length).toBe(body.size)
    const forced = join(files, 'forced.bin')
    expect((await run(['voice', 'tts', 'Forced format', '-o', forced, '--format', 'ogg'])).code).toBe(0)
    expect(readFileSync(forced).subarray(0, 4).toString()).toBe('OggS')
    const unknown = await run(['voice', 'tts', 'hi', '--voice', 'nobody'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('error UNKNOWN_VOICE:')
    expect((await run(['voice', 'tts', 'hi', '-o', join(files, 'x.flac')])).code).toBe(2)
  })

  test('voices lists the engine voices', async () => {
    const human = await run(['voice', 'voices'])
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/^ID\s+LANGUAGE\s+NAME/)
    expect(human.stdout).toContain('English (America)')
    const json = JSON.parse((await run(['--json', 'voice', 'voices'])).stdout)
    expect(json.voices).toContainEqual({ id: 'en-us', name: 'English (America)', language: 'en-US' })
  })

  test('command with text; autopilot start --auto-execute, status, stop', async () => {
    const proposed = await run(['voice', 'command', 'what', 'is', 'seventeen', 'plus', 'twenty', 'five'])
    expect(proposed.code).toBe(0)
    expect(proposed.stdout).toContain('plugin_execute')
    expect(proposed.stdout).toContain('plugins.execute:calculator')
    const start = JSON.parse((await run(['--json', 'voice', 'autopilot', 'start', '--auto-execute'])).stdout)
    expect(start).toMatchObject({ mode: 'start', status: 'active', preferences: { autoExecute: true } })
    const status = await run(['voice', 'autopilot', 'status'])
    expect(status.stdout).toContain('active')
    expect(status.stdout).toContain(start.sessionId)
    const done = JSON.parse((await run(['--json', 'voice', 'command', 'calculate 12 times 8'])).stdout)
    expect(done).toMatchObject({ intent: 'plugin_execute', executed: true })
    expect(done.response).toContain('96')
    const stopped = JSON.parse((await run(['--json', 'voice', 'autopilot', 'stop'])).stdout)
    expect(stopped).toMatchObject({ status: 'stopped', sessionId: start.sessionId })
    expect((await run(['voice', 'autopilot', 'fly'])).code).toBe(2)
    expect((await run(['voice', 'command'])).code).toBe(2)
  })

  test.skipIf(!recognizerInstalled())('transcribe FILE and command --audio FILE', async () => {
    const wav = join(files, 'command.wav')
    expect((await run(['voice', 'tts', 'what time is it', '-o', wav])).code).toBe(0)
    const heard = await run(['voice', 'transcribe', wav])
    expect(heard.code).toBe(0)
    expect(heard.stdout.trim()).toBe('what time is it')
    const json = JSON.parse((await run(['--json', 'voice', 'transcribe', wav, '--mode', 'dictation'])).stdout)
    expect(json.mode).toBe('dictation')
    const command = JSON.parse((await run(['--json', 'voice', 'command', '--audio', wav])).stdout)
    expect(command).toMatchObject({ command: 'what time is it', intent: 'time', transcript: { mode: 'commands' } })
    const missing = await run(['voice', 'transcribe', join(files, 'nope.wav')])
    expect(missing.code).toBe(2)
  })
})
