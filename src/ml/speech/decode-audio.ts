import { OggVorbisDecoder } from '@wasm-audio-decoders/ogg-vorbis'
import { MPEGDecoder } from 'mpg123-decoder'
import { AudioFormatError, type Pcm, parseWav } from './pcm'

function mixDown(channels: Float32Array[], length: number): Float32Array {
  if (channels.length === 1) return channels[0]!.subarray(0, length)
  const out = new Float32Array(length)
  for (const channel of channels) for (let i = 0; i < length; i++) out[i]! += channel[i]! / channels.length
  return out
}

const isMpeg = (b: Uint8Array) => (b[0] === 0x49 && b[1] === 0x44 && b[2] === 0x33) || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0)

/** WAV (any PCM or float layout), MP3 or Ogg Vorbis bytes → mono samples. Throws AudioFormatError. */
export async function decodeAudio(bytes: Uint8Array): Promise<Pcm> {
  if (bytes.length < 4) throw new AudioFormatError('the audio is empty or truncated')
  const magic = String.fromCharCode(...bytes.subarray(0, 4))
  if (magic === 'RIFF') return parseWav(bytes)
  if (magic === 'OggS') {
    const decoder = new OggVorbisDecoder()
    await decoder.ready
    try {
      const decoded = await decoder.decodeFile(bytes)
      if (!decoded.samplesDecoded) throw new AudioFormatError('the Ogg stream holds no Vorbis audio')
      return { samples: mixDown(decoded.channelData, decoded.samplesDecoded), sampleRate: decoded.sampleRate }
    } finally {
      decoder.free()
    }
  }
  if (isMpeg(bytes)) {
    const decoder = new MPEGDecoder()
    await decoder.ready
    try {
      const decoded = decoder.decode(bytes)
      if (!decoded.samplesDecoded) throw new AudioFormatError('no MPEG audio frames found')
      return { samples: mixDown(decoded.channelData, decoded.samplesDecoded), sampleRate: decoded.sampleRate }
    } finally {
      decoder.free()
    }
  }
  throw new AudioFormatError('unrecognized audio: send WAV, MP3 or Ogg Vorbis')
}
