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

/** The encoders' WebAssembly is compiled once per process, then instantiated per stream. */
function wasmEncoder(mime: 'audio/mpeg' | 'audio/ogg') {
  compiled[mime] ??= Bun.file(require.resolve(mime === 'audio/mpeg' ? 'wasm-media-encoders/wasm/mp3' : 'wasm-media-encoders/wasm/ogg'))
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes))
  return compiled[mime].then((module) => createEncoder(mime, module))
}

export async function createStreamEncoder(format: AudioFormat, sampleRate: number): Promise<StreamEncoder> {
  if (format === 'wav') {
    let samples = 0
    let headerSent = false
    const pcm = (chunk: Float32Array) => {
      const out = new Uint8Array(chunk.length * 2)
      const view = new DataView(out.buffer)
      for (let i = 0; i < chunk.length; i++) {
        const s = Math.max(-1, Math.min(1, chunk[i]!))
        view.setInt16(i * 2, s < 0 ? s * 0x8000 : s * 0x7fff, true)
      }
      samples += chunk.length
      return out
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
  const encoder = await wasmEncoder(format === 'mp3' ? 'audio/mpeg' : 'audio/ogg')
  encoder.configure(format === 'mp3' ? { sampleRate, channels: 1, vbrQuality: 4 } : { sampleRate, channels: 1, vbrQuality: 3 })
  // The encoder owns the returned buffer until its next call: copy.
  return {
    encode: (chunk) => encoder.encode([chunk]).slice(),
    finish: () => encoder.finalize().slice(),
  }
}
