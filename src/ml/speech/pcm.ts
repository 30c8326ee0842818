/** Mono audio as float samples in [-1, 1] at a sample rate. */
export interface Pcm {
  samples: Float32Array
  sampleRate: number
}

export class AudioFormatError extends Error {}

/** The 44-byte header of a 16-bit mono PCM WAV file holding `samples` samples. */
export function wavHeader(samples: number, sampleRate: number): Uint8Array {
  const header = new Uint8Array(44)
  const view = new DataView(header.buffer)
  const ascii = (offset: number, text: string) => [...text].forEach((c, i) => (header[offset + i] = c.charCodeAt(0)))
  ascii(0, 'RIFF')
  view.setUint32(4, 36 + samples * 2, true)
  ascii(8, 'WAVE')
  ascii(12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * 2, true)
  view.setUint16(32, 2, true)
  view.setUint16(34, 16, true)
  ascii(36, 'data')
  view.setUint32(40, samples * 2, true)
  return header
}

export function floatToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length)
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!))
    out[i] = s < 0 ? s * 0x8000 : s * 0x7fff
  }
  return out
}

/**
 * Reads a RIFF/WAVE file: PCM 8, 16, 24 or 32 bits or IEEE float, any channel count (mixed to mono),
 * any rate. Throws AudioFormatError for anything else.
 */
export function parseWav(bytes: Uint8Array): Pcm {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const tag = (offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4))
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new AudioFormatError('not a RIFF/WAVE file')
  let format = 0
  let channels = 0
  let sampleRate = 0
  let bits = 0
  let offset = 12
  while (offset + 8 <= bytes.length) {
    const id = tag(offset)
    const size = view.getUint32(offset + 4, true)
    const body = offset + 8
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw new AudioFormatError('WAV fmt chunk is truncated')
      format = view.getUint16(body, true)
      channels = view.getUint16(body + 2, true)
      sampleRate = view.getUint32(body + 4, true)
      bits = view.getUint16(body + 14, true)
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
      if (format === 0xfffe && size >= 40) format = view.getUint16(body + 24, true)
    } else if (id === 'data') {
      if (!format) throw new AudioFormatError('WAV data chunk comes before its fmt chunk')
      // Streams written without knowing their length carry 0 or 0xFFFFFFFF: take what is there.
      const length = size === 0 || size === 0xffffffff ? bytes.length - body : Math.min(size, bytes.length - body)
      return { samples: decodeSamples(view, body, length, format, channels, bits), sampleRate }
    }
    offset = body + size + (size % 2)
  }
  throw new AudioFormatError('WAV file has no data chunk')
}

function decodeSamples(view: DataView, start: number, length: number, format: number, channels: number, bits: number): Float32Array {
  if (channels < 1 || channels > 16) throw new AudioFormatError(`WAV has ${channels} channels`)
  const width = bits / 8
  const read: ((at: number) => number) | undefined =
    format === 1 && bits === 8 ? (at) => (view.getUint8(at) - 128) / 128
    : format === 1 && bits === 16 ? (at) => view.getInt16(at, true) / 32768
    : format === 1 && bits === 24 ? (at) => ((view.getUint8(at) | (view.getUint8(at + 1) << 8) | (view.getInt8(at + 2) << 16)) / 8388608)
    : format === 1 && bits === 32 ? (at) => view.getInt32(at, true) / 2147483648
    : format === 3 && bits === 32 ? (at) => view.getFloat32(at, true)
    : format === 3 && bits === 64 ? (at) => view.getFloat64(at, true)
    : undefined
  if (!read) throw new AudioFormatError(`WAV encoding ${format} with ${bits} bits per sample is not supported (use PCM or float)`)
  const frame = width * channels
  const frames = Math.floor(length / frame)
  const out = new Float32Array(frames)
  for (let i = 0; i < frames; i++) {
    let sum = 0
    for (let c = 0; c < channels; c++) sum += read(start + i * frame + c * width)
    out[i] = sum / channels
  }
  return out
}

/** Band-limited enough for speech: linear interpolation after a box low-pass when downsampling. */
export function resample(samples: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return samples
  let source = samples
  if (to < from) {
    // Average over the source samples that fold into one target sample, to keep aliasing down.
    const width = Math.max(1, Math.round(from / to))
    if (width > 1) {
      source = new Float32Array(samples.length)
      let sum = 0
      for (let i = 0; i < samples.length; i++) {
        sum += samples[i]!
        if (i >= width) sum -= samples[i - width]!
        source[i] = sum / Math.min(i + 1, width)
      }
    }
  }
  const length = Math.floor((source.length * to) / from)
  const out = new Float32Array(length)
  const step = from / to
  for (let i = 0; i < length; i++) {
    const position = i * step
    const j = Math.floor(position)
    const fraction = position - j
    out[i] = source[j]! * (1 - fraction) + (source[j + 1] ?? source[j]!) * fraction
  }
  return out
}
