/**
 * Microphone capture as 16-bit mono WAV. The server reads WAV, MP3 and Ogg Vorbis; a browser's
 * MediaRecorder writes WebM/Ogg Opus, so samples are taken from Web Audio and written as WAV here.
 */
export class WavRecorder {
  private context: AudioContext | null = null
  private stream: MediaStream | null = null
  private node: ScriptProcessorNode | null = null
  private chunks: Float32Array[] = []

  async start(): Promise<void> {
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } })
    this.context = new AudioContext()
    const source = this.context.createMediaStreamSource(this.stream)
    this.node = this.context.createScriptProcessor(4096, 1, 1)
    this.chunks = []
    this.node.onaudioprocess = (event) => this.chunks.push(new Float32Array(event.inputBuffer.getChannelData(0)))
    source.connect(this.node)
    this.node.connect(this.context.destination)
  }

  /** Stops capture; the WAV bytes of what was heard. */
  async stop(): Promise<Uint8Array> {
    const rate = this.context?.sampleRate ?? 48000
    this.node?.disconnect()
    for (const track of this.stream?.getTracks() ?? []) track.stop()
    await this.context?.close()
    this.context = null
    const length = this.chunks.reduce((sum, c) => sum + c.length, 0)
    const samples = new Float32Array(length)
    let offset = 0
    for (const chunk of this.chunks) samples.set(chunk, offset), (offset += chunk.length)
    return encodeWav(samples, rate)
  }
}

export function encodeWav(samples: Float32Array, sampleRate: number): Uint8Array {
  const bytes = new Uint8Array(44 + samples.length * 2)
  const view = new DataView(bytes.buffer)
  const text = (at: number, value: string) => [...value].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)))
  text(0, 'RIFF')
  view.setUint32(4, 36 + samples.length * 2, true)
  text(8, 'WAVE')
  text(12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * 2, true)
  view.setUint16(32, 2, true)
  view.setUint16(34, 16, true)
  text(36, 'data')
  view.setUint32(40, samples.length * 2, true)
  samples.forEach((s, i) => view.setInt16(44 + i * 2, Math.max(-1, Math.min(1, s)) * 0x7fff, true))
  return bytes
}

export function toBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}
