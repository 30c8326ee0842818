import { createRequire } from 'node:module'
import { createEncoder } from 'wasm-media-encoders'
import { wavHeader } from './pcm'

export type AudioFormat = 'wav' | 'mp3' | 'ogg'
export const AUDIO_FORMATS: AudioFormat[] = ['mp3', 'wav', 'ogg']
export const CONTENT_TYPES: Record<AudioFormat, string> = { wav: 'audio/wav', mp3: 'audio/mpeg', ogg: 'audio/ogg' }

/** Takes float chunks, returns encoded bytes as they become available; `finish` returns the rest. */
export interface StreamEncoder {
  encode(samples: Float32Array): Uint8Array
  finish(): Uint8Array
  /** WAV only: the header to write over the placeholder once the length is known. */
  header?(): Uint8Array
}

const require = createRequire(import.meta.url)
const compiled: Partial<Record<'audio/mpeg' | 'audio/ogg', Promise<WebAssembly.Module>>> = {}

type WasmEncoder = Awaited<ReturnType<typeof createEncoder<'audio/mpeg' | 'audio/ogg'>>>
/** Encoders whose stream finished, for the next streams: instantiating one cost ~4 ms a stream. */
const idle: Record<'audio/mpeg' | 'audio/ogg', WasmEncoder[]> = { 'audio/mpeg': [], 'audio/ogg': [] }
const IDLE_ENCODERS = 2

/**
 * The encoders' WebAssembly is compiled once per process and instantiated when no finished one is
 * idle; `configure` resets an encoder's whole state (the library's way to reuse one), so a reused
 * encoder gives the same bytes as a new one.
 */
async function wasmEncoder(mime: 'audio/mpeg' | 'audio/ogg'): Promise<WasmEncoder> {
  const spare = idle[mime].pop()
  if (spare) return spare
  compiled[mime] ??= Bun.file(require.resolve(mime === 'audio/mpeg' ? 'wasm-media-encoders/wasm/mp3' : 'wasm-media-encoders/wasm/ogg'))
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes))
  return createEncoder(mime, await compiled[mime]) as Promise<WasmEncoder>
}

export async function createStreamEncoder(format: AudioFormat, sampleRate: number): Promise<StreamEncoder> {
  if (format === 'wav') {
    let samples = 0
    let headerSent = false
    const pcm = (chunk: Float32Array) => {
      // An Int16Array stores little-endian on every platform Bun runs on, and converts a number as
      // DataView.setInt16 does (truncated; NaN is 0): the same bytes, about 5x quicker.
      const out = new Int16Array(chunk.length)
      for (let i = 0; i < chunk.length; i++) {
        let s = chunk[i]!
        if (s > 1) s = 1
        else if (s < -1) s = -1
        out[i] = s < 0 ? s * 0x8000 : s * 0x7fff
      }
      samples += chunk.length
      return new Uint8Array(out.buffer)
    }
    return {
      encode(chunk) {
        const body = pcm(chunk)
        if (headerSent) return body
        headerSent = true
        const out = new Uint8Array(44 + body.length)
        out.set(wavHeader(0, sampleRate))
        out.set(body, 44)
        return out
      },
      finish: () => (headerSent ? new Uint8Array(0) : ((headerSent = true), wavHeader(0, sampleRate))),
      header: () => wavHeader(samples, sampleRate),
    }
  }
  const mime = format === 'mp3' ? 'audio/mpeg' : 'audio/ogg'
  const encoder = await wasmEncoder(mime)
  encoder.configure(format === 'mp3' ? { sampleRate, channels: 1, vbrQuality: 4 } : { sampleRate, channels: 1, vbrQuality: 3 })
  // The encoder owns the returned buffer until its next call: copy.
  return {
    encode: (chunk) => encoder.encode([chunk]).slice(),
    finish: () => {
      const rest = encoder.finalize().slice()
      // Only an encoder that finished cleanly is kept (one that threw is dropped with its stream).
      if (idle[mime].length < IDLE_ENCODERS) idle[mime].push(encoder)
      return rest
    },
  }
}
