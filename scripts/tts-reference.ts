// `bun scripts/tts-reference.ts <checkout>`: the audio a checkout's synthesizeToFile makes for the
// cases below, as sizes and SHA-256 digests (JSON on stdout). test/fixtures/tts-reference.json is
// its output for main before speech moved to the work pool (commit 7dfb60a); test/modules/voice/
// tts-identical.test.ts checks that POST /voice/tts still makes exactly those bytes.
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const TTS_CASES = [
  { text: 'The backup finished at noon. Every file was copied to the second disk.', voice: 'default', language: 'en-US', speed: 1 },
  { text: 'Quick: speak this fast, then stop.', voice: 'en-us+f2', language: 'en-US', speed: 3 },
  { text: 'Bonjour, la sauvegarde est terminée.', voice: 'default', language: 'fr', speed: 0.5 },
  // Longer than one synthesis piece (1000 characters): several pieces, one stream.
  { text: 'The harbour office opens at six in the morning, and the keys are kept by the duty officer. '.repeat(14), voice: 'default', language: 'en-US', speed: 1.2 },
]
export const TTS_FORMATS = ['wav', 'mp3', 'ogg'] as const
/** Spoken by every voice of the engine, as WAV: the samples of each voice compared. */
export const EVERY_VOICE_TEXT = 'The office opens at six, 42 times. Ça va?'

/** Ogg pages carry a random stream serial (and a CRC over it), different at every call: both zeroed, the rest kept. */
export function comparableAudio(bytes: Uint8Array, format: string): Uint8Array {
  if (format !== 'ogg') return bytes
  const copy = new Uint8Array(bytes)
  let at = 0
  while (at + 27 <= copy.length && copy[at] === 0x4f && copy[at + 1] === 0x67 && copy[at + 2] === 0x67 && copy[at + 3] === 0x53) {
    const segments = copy[at + 26]!
    let size = 27 + segments
    for (let i = 0; i < segments; i++) size += copy[at + 27 + i]!
    copy.fill(0, at + 14, at + 18)
    copy.fill(0, at + 22, at + 26)
    at += size
  }
  if (at !== copy.length) throw new Error('not a whole Ogg stream')
  return copy
}

export const audioDigest = (bytes: Uint8Array, format: string) => createHash('sha256').update(comparableAudio(bytes, format)).digest('hex')

if (import.meta.main) {
  const root = resolve(process.argv[2] ?? '.')
  const { resolveVoice, synthesizeToFile } = await import(join(root, 'src/ml/speech/synthesizer.ts'))
  const { listVoices } = await import(join(root, 'src/ml/speech/espeak.ts'))
  const dir = mkdtempSync(join(tmpdir(), 'uagent-tts-reference-'))
  const out = []
  try {
    for (const c of TTS_CASES) {
      for (const format of TTS_FORMATS) {
        const path = join(dir, `audio.${format}`)
        const result = await synthesizeToFile(path, { text: c.text, voice: resolveVoice(c.voice, c.language), speed: c.speed, format })
        out.push({ ...c, format, bytes: result.bytes, sha256: audioDigest(readFileSync(path), format) })
      }
    }
    for (const { id } of listVoices() as { id: string }[]) {
      const path = join(dir, 'voice.wav')
      const result = await synthesizeToFile(path, { text: EVERY_VOICE_TEXT, voice: id, speed: 1, format: 'wav' })
      out.push({ text: EVERY_VOICE_TEXT, voice: id, language: 'en-US', speed: 1, format: 'wav', bytes: result.bytes, sha256: audioDigest(readFileSync(path), 'wav') })
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  console.log(JSON.stringify(out, null, 2))
}
