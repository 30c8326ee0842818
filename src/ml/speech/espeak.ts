import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { mountSpeechData, type SpeechMount } from './espeak-fs'

const require = createRequire(import.meta.url)

/** A voice espeak-ng really has: one per language file in text2wav's espeak-ng-data. */
export interface Voice {
  /** What `voice` takes, e.g. `en-us`. */
  id: string
  name: string
  /** Locale-style tag, e.g. `en-US`. */
  language: string
}

export const ESPEAK_RATE = 22050
/** espeak-ng's own speed range in words per minute; beyond it the audio is time-stretched. */
export const MIN_WPM = 80
export const MAX_WPM = 450
export const DEFAULT_WPM = 175

const packageDir = dirname(require.resolve('text2wav/package.json'))

/** `en-us` → `en-US`, `cmn-latn-pinyin` → `cmn-Latn-pinyin` (BCP 47 casing). */
function localeTag(code: string): string {
  return code
    .split('-')
    .map((part, i) => (i === 0 ? part.toLowerCase() : part.length === 2 ? part.toUpperCase() : part.length === 4 ? part[0]!.toUpperCase() + part.slice(1).toLowerCase() : part))
    .join('-')
}

let voices: Voice[] | undefined
/** Voice id → its file under `lang/` (`en-us` → `gmw/en-US`). */
const voiceFiles = new Map<string, string>()

/** The language voices in the engine's data, read once from its voice files. */
export function listVoices(): Voice[] {
  if (voices) return voices
  const root = join(packageDir, 'espeak-ng-data/lang')
  const found: Voice[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else {
        const text = readFileSync(path, 'utf8')
        const name = /^name\s+(.+)$/m.exec(text)?.[1]?.trim() ?? entry.name
        const language = /^language\s+(\S+)/m.exec(text)?.[1] ?? entry.name
        found.push({ id: entry.name.toLowerCase(), name, language: localeTag(language) })
        voiceFiles.set(entry.name.toLowerCase(), relative(root, path))
      }
    }
  }
  walk(root)
  voices = found.sort((a, b) => a.id.localeCompare(b.id))
  return voices
}

let variants: string[] | undefined

/** Voice variants (`m3`, `f2`, `whisper`…) that can follow a voice id after `+`. */
export function listVariants(): string[] {
  variants ??= readdirSync(join(packageDir, 'espeak-ng-data/voices/!v')).map((name) => name.toLowerCase())
  return variants
}

type EmscriptenModule = Record<string, any>
/** Where the engine looks for `espeak-ng-data`, and the WAV it writes there. */
const DATA_MOUNT = '/usr/share'
const OUTPUT = 'out.wav'
let compiled: Promise<WebAssembly.Module> | undefined

function wasmModule(): Promise<WebAssembly.Module> {
  compiled ??= Bun.file(join(packageDir, 'lib/espeak-ng.wasm'))
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes))
  return compiled
}

/** The build's fixed memory (its TOTAL_MEMORY; it cannot grow). */
const MEMORY_BYTES = 16 * 1024 * 1024
/** Memories of finished runs, zeroed again, for the next runs: a new one cost ~4 ms a call. */
const spareMemories: WebAssembly.Memory[] = []

/**
 * Zeroes what a finished run used, so the next instance starts on memory exactly as fresh as a new
 * one (its data segments are written again when it is instantiated). A run that ended normally used
 * the memory up to its heap's top (the stack lies below the heap); any other run is zeroed whole.
 */
function recycle(memory: WebAssembly.Memory, dynamicTopPointer: number | undefined) {
  if (spareMemories.length >= 2) return
  const bytes = new Uint8Array(memory.buffer)
  let end = bytes.length
  if (dynamicTopPointer !== undefined && Number.isInteger(dynamicTopPointer) && dynamicTopPointer > 0 && dynamicTopPointer < bytes.length) {
    const top = new Int32Array(memory.buffer)[dynamicTopPointer >> 2]!
    if (top > dynamicTopPointer && top <= bytes.length) end = top
  }
  bytes.fill(0, 0, end)
  spareMemories.push(memory)
}

/**
 * Speaks `text` with espeak-ng (compiled once, instantiated per call on zeroed memory so each call
 * starts clean, its data served from memory by `espeak-fs.ts`) → 16-bit mono samples at 22050 Hz.
 */
export async function espeak(text: string, voice: string, wordsPerMinute: number): Promise<Int16Array> {
  const module = await wasmModule()
  // A voice named by its file (`gmw/en-US`) is loaded directly (see `espeak-fs.ts`); by its id,
  // espeak-ng first reads every voice file of its data to find it. Same voice, same samples (all
  // 106 voices compared).
  listVoices()
  const [id = '', ...variant] = voice.split('+')
  const file = voiceFiles.get(id.toLowerCase())
  const engineVoice = file ? [file, ...variant].join('+') : voice
  const factory = require('text2wav/lib/espeak-ng') as (module: EmscriptenModule) => void
  const wpm = String(Math.round(Math.min(MAX_WPM, Math.max(MIN_WPM, wordsPerMinute))))
  const errors: string[] = []
  let mount: SpeechMount | undefined
  const memory = spareMemories.pop() ?? new WebAssembly.Memory({ initial: MEMORY_BYTES / 65536, maximum: MEMORY_BYTES / 65536 })
  let dynamicTopPointer: number | undefined
  let finished = false
  const wav = await new Promise<Uint8Array>((resolve, reject) => {
    const instance: EmscriptenModule = {
      TOTAL_MEMORY: MEMORY_BYTES,
      wasmMemory: memory,
      buffer: memory.buffer,
      // `--` ends the options: a text starting with "-" is spoken, not parsed.
      arguments: ['-v', engineVoice, '-s', wpm, '-w', `${DATA_MOUNT}/${OUTPUT}`, '--', text],
      print: () => {},
      // Never the library's process.exit.
      quit: () => {},
      printErr: (line: string) => errors.push(line),
      // Instantiated from the compiled module, asynchronously: the library mounts its data folder
      // after this returns, and must have done so before main runs.
      instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
        dynamicTopPointer = Number(imports.env?.DYNAMICTOP_PTR)
        WebAssembly.instantiate(module, imports).then(done, reject)
        return {}
      },
      // The library mounts its data folder from disk (NODEFS); the same files are served from memory.
      preRun() {
        mount = mountSpeechData(instance.FS, DATA_MOUNT, packageDir)
      },
      postRun() {
        try {
          const wav = mount?.output(OUTPUT)
          instance.FS.unmount(DATA_MOUNT)
          if (!wav) return reject(new Error(`espeak-ng failed: ${errors.join(' ') || 'no output'}`))
          finished = true
          resolve(wav)
        } catch (error) {
          reject(error)
        }
      },
      onAbort: (what: unknown) => reject(new Error(`espeak-ng aborted: ${String(what)} ${errors.join(' ')}`)),
    }
    // The library's Node shell installs process-wide handlers on every instantiation (one of them
    // aborts on any unhandled rejection): take them off again at once.
    const before = { uncaughtException: process.listeners('uncaughtException'), unhandledRejection: process.listeners('unhandledRejection') }
    try {
      factory(instance)
    } finally {
      for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
        for (const listener of process.listeners(event)) if (!before[event].includes(listener)) process.removeListener(event, listener)
      }
    }
  }).finally(() => recycle(memory, finished ? dynamicTopPointer : undefined))
  const dataStart = 44
  const usable = wav.length - dataStart - ((wav.length - dataStart) % 2)
  return new Int16Array(wav.buffer.slice(wav.byteOffset + dataStart, wav.byteOffset + dataStart + usable))
}
