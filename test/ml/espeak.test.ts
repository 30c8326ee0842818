import { expect, test } from 'bun:test'
import fs from 'node:fs'
import { espeak } from '../../src/ml/speech/espeak'

// espeak-ng's data is served from memory (src/ml/speech/espeak-fs.ts): once a voice's files have
// been read, speaking touches the disk no more. Under Emscripten's NODEFS every piece made 600-odd
// system calls, most of them reading every voice file because espeak-ng looks for `gmw/en-us`
// (lowercased) where the file is `gmw/en-US`.
test('a second sentence in a voice is spoken without a file system call, and the same text gives the same samples', async () => {
  const first = await espeak('The harbour office opens at six.', 'en-us', 175)
  expect(first.length).toBeGreaterThan(22050) // more than a second of speech
  const calls: string[] = []
  const spied = ['openSync', 'readSync', 'lstatSync', 'statSync', 'readdirSync', 'readFileSync'] as const
  const originals = spied.map((name) => [name, fs[name]] as const)
  for (const [name, original] of originals) {
    ;(fs as Record<string, unknown>)[name] = (...args: unknown[]) => {
      calls.push(`${name} ${String(args[0])}`)
      return (original as (...a: unknown[]) => unknown)(...args)
    }
  }
  let again: Int16Array
  try {
    again = await espeak('The harbour office opens at six.', 'en-us', 175)
  } finally {
    for (const [name, original] of originals) (fs as Record<string, unknown>)[name] = original
  }
  // (The library still mounts its own NODEFS before ours replaces it: one lstat of the package.)
  expect(calls.filter((call) => call.includes('espeak-ng-data'))).toEqual([])
  expect(calls.length).toBeLessThanOrEqual(1)
  expect(Buffer.from(again.buffer, again.byteOffset, again.byteLength).equals(Buffer.from(first.buffer, first.byteOffset, first.byteLength))).toBe(true)
})

test('voices whose files are named in capitals, and variants, speak', async () => {
  for (const voice of ['en-us', 'EN-US', 'pt-br', 'en-gb-x-rp', 'de+f2', 'fr-fr+whisper']) {
    const pcm = await espeak('One two three.', voice, 175)
    expect({ voice, long: pcm.length > 5000 }).toEqual({ voice, long: true })
  }
})
