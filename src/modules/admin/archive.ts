// A minimal POSIX tar (ustar) writer and reader: enough for backups of regular files, with no
// dependency. Archives are gzipped by the caller.

const BLOCK = 512

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`
}

/** The 512-byte ustar header of a regular file (names up to 255 bytes, split into prefix/name). */
export function tarHeader(path: string, size: number, mtime: Date, mode = 0o600): Uint8Array {
  const header = new Uint8Array(BLOCK)
  const encoder = new TextEncoder()
  let name = path
  let prefix = ''
  if (encoder.encode(name).length > 100) {
    const cut = path.lastIndexOf('/', 154)
    if (cut <= 0 || encoder.encode(path.slice(cut + 1)).length > 100) throw new Error(`path too long for the archive: ${path}`)
    prefix = path.slice(0, cut)
    name = path.slice(cut + 1)
  }
  const put = (text: string, offset: number, width: number) => header.set(encoder.encode(text).subarray(0, width), offset)
  put(name, 0, 100)
  put(octal(mode, 8), 100, 8)
  put(octal(0, 8), 108, 8)
  put(octal(0, 8), 116, 8)
  put(octal(size, 12), 124, 12)
  put(octal(Math.floor(mtime.getTime() / 1000), 12), 136, 12)
  put('        ', 148, 8)
  put('0', 156, 1)
  put('ustar\0', 257, 6)
  put('00', 263, 2)
  put(prefix, 345, 155)
  let sum = 0
  for (const byte of header) sum += byte
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8)
  return header
}

/** Zero bytes that pad a file's content to a whole block. */
export function tarPadding(size: number): Uint8Array {
  return new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK)
}

/** The two zero blocks that end an archive. */
export const TAR_END = new Uint8Array(BLOCK * 2)

export interface TarEntry {
  path: string
  size: number
  type: 'file' | 'directory' | 'other'
}

function readString(block: Uint8Array, offset: number, width: number): string {
  const slice = block.subarray(offset, offset + width)
  const end = slice.indexOf(0)
  return new TextDecoder().decode(end === -1 ? slice : slice.subarray(0, end))
}

/**
 * Reads a tar stream entry by entry: `onEntry` is called with each entry, and returns a sink for
 * its content (or null to skip it). Checks every header's checksum.
 */
export async function readTar(
  stream: AsyncIterable<Uint8Array>,
  onEntry: (entry: TarEntry) => { write(chunk: Uint8Array): void | Promise<void>; end(): void | Promise<void> } | null,
): Promise<void> {
  let buffer = new Uint8Array(0)
  let remaining = 0
  let padding = 0
  let sink: ReturnType<typeof onEntry> = null
  let ended = false
  const take = (chunk: Uint8Array) => {
    const joined = new Uint8Array(buffer.length + chunk.length)
    joined.set(buffer)
    joined.set(chunk, buffer.length)
    buffer = joined
  }
  for await (const chunk of stream) {
    take(chunk)
    for (;;) {
      if (remaining > 0) {
        if (!buffer.length) break
        const part = buffer.subarray(0, Math.min(remaining, buffer.length))
        if (sink) await sink.write(part.slice())
        remaining -= part.length
        buffer = buffer.subarray(part.length)
        if (remaining === 0 && sink) await sink.end()
        continue
      }
      if (padding > 0) {
        if (!buffer.length) break
        const skip = Math.min(padding, buffer.length)
        padding -= skip
        buffer = buffer.subarray(skip)
        continue
      }
      if (ended || buffer.length < BLOCK) break
      const header = buffer.subarray(0, BLOCK)
      buffer = buffer.subarray(BLOCK)
      if (header.every((byte) => byte === 0)) {
        ended = true
        continue
      }
      let sum = 0
      for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!
      if (Number.parseInt(readString(header, 148, 8).trim(), 8) !== sum) throw new Error('a tar header checksum does not match: the archive is damaged')
      const name = readString(header, 0, 100)
      const prefix = readString(header, 345, 155)
      const size = Number.parseInt(readString(header, 124, 12).trim() || '0', 8)
      const flag = String.fromCharCode(header[156]!)
      const type = flag === '0' || flag === '\0' ? 'file' : flag === '5' ? 'directory' : 'other'
      sink = onEntry({ path: prefix ? `${prefix}/${name}` : name, size, type })
      remaining = size
      padding = (BLOCK - (size % BLOCK)) % BLOCK
      if (size === 0 && sink) await sink.end()
    }
  }
  if (remaining > 0 || !ended) throw new Error('the archive ends early: it is truncated or damaged')
}
