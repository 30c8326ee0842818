import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { AppError } from '../../../core/errors'

/** A file part of a multipart body, written to disk as it arrived. */
export interface ReceivedFile {
  /** The file name the client sent (may hold a relative path, e.g. `guides/vpn.md`). */
  fileName: string
  path: string
  bytes: number
  /** SHA-256 (hex) of the bytes. */
  sha256: string
  /** Text fields sent just before this file (`id`, `source`): they apply to it. */
  fields: Record<string, string>
}

interface Part {
  name: string
  file: ReceivedFile | null
  sink: ReturnType<ReturnType<typeof Bun.file>['writer']> | null
  hash: ReturnType<typeof createHash> | null
  text: Buffer[]
  textBytes: number
}

const MAX_FIELD_BYTES = 64 * 1024
const MAX_HEADER_BYTES = 16 * 1024
const MAX_PARTS = 1000
const CRLF = Buffer.from('\r\n')

function headerParam(header: string, name: string): string | null {
  const extended = new RegExp(`;\\s*${name}\\*=([^']*)'[^']*'([^;]+)`, 'i').exec(header)
  if (extended) {
    try {
      return decodeURIComponent(extended[2]!.trim())
    } catch {
      return extended[2]!.trim()
    }
  }
  const quoted = new RegExp(`;\\s*${name}="((?:[^"\\\\]|\\\\.)*)"`, 'i').exec(header)
  if (quoted) return quoted[1]!.replace(/\\(.)/g, '$1')
  const bare = new RegExp(`;\\s*${name}=([^;\\s]+)`, 'i').exec(header)
  return bare ? bare[1]! : null
}

/** The boundary of a multipart/form-data content type; a 400 when it is not one. */
export function multipartBoundary(contentType: string | null): string {
  if (!contentType || !/^multipart\/form-data/i.test(contentType)) {
    throw new AppError('VALIDATION_ERROR', 'body: expected multipart/form-data with one or more files (field "files")')
  }
  const boundary = headerParam(`; ${contentType.split(';').slice(1).join(';')}`, 'boundary')
  if (!boundary || boundary.length > 200) throw new AppError('VALIDATION_ERROR', 'body: multipart/form-data without a boundary')
  return boundary
}

/**
 * Reads a multipart/form-data body as it streams in, writing each file part to its own file in
 * `dir` (never holding a whole file in memory) and hashing it on the way. Counts the bytes read
 * and stops with 413 once they pass `maxBytes`. Text fields are kept (up to 64 KB each).
 */
export async function receiveMultipart(body: ReadableStream<Uint8Array>, boundary: string, dir: string, maxBytes: number): Promise<{ files: ReceivedFile[]; fields: Record<string, string> }> {
  const delimiter = Buffer.from(`\r\n--${boundary}`)
  const files: ReceivedFile[] = []
  const fields: Record<string, string> = {}
  let pending: Record<string, string> = {}
  // The body starts with the first delimiter without its leading CRLF: parse as if it had one.
  let buffer: Buffer = Buffer.from(CRLF)
  let received = 0
  let state: 'preamble' | 'headers' | 'body' | 'done' = 'preamble'
  let part = null as Part | null

  const bad = (message: string) => new AppError('VALIDATION_ERROR', `body: malformed multipart/form-data (${message})`)
  const writeBody = (data: Buffer) => {
    if (!part || data.length === 0) return
    if (part.file) {
      part.sink!.write(data)
      part.hash!.update(data)
      part.file.bytes += data.length
    } else {
      part.textBytes += data.length
      if (part.textBytes > MAX_FIELD_BYTES) throw new AppError('VALIDATION_ERROR', `body.${part.name}: a text field may hold at most 64 KB`)
      part.text.push(data)
    }
  }
  const endPart = async () => {
    if (!part) return
    if (part.file) {
      await part.sink!.end()
      part.file.sha256 = part.hash!.digest('hex')
      files.push(part.file)
      pending = {}
    } else {
      const value = Buffer.concat(part.text).toString('utf8')
      fields[part.name] = value
      pending[part.name] = value
    }
    part = null
  }
  const startPart = (headers: string) => {
    const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? ''
    const name = headerParam(disposition, 'name') ?? ''
    const fileName = headerParam(disposition, 'filename')
    if (files.length + Object.keys(fields).length >= MAX_PARTS) throw new AppError('VALIDATION_ERROR', `body: at most ${MAX_PARTS} parts per upload`)
    if (fileName !== null) {
      if (!fileName.trim()) throw new AppError('VALIDATION_ERROR', 'body.files: a file part without a file name')
      const path = join(dir, `${files.length}.upload`)
      part = { name, file: { fileName, path, bytes: 0, sha256: '', fields: pending }, sink: Bun.file(path).writer(), hash: createHash('sha256'), text: [], textBytes: 0 }
    } else part = { name, file: null, sink: null, hash: null, text: [], textBytes: 0 }
  }

  const reader = body.getReader()
  try {
    while (state !== 'done') {
      const { value, done } = await reader.read()
      if (done) break
      received += value.byteLength
      if (received > maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'Request body exceeds the upload size limit')
      buffer = buffer.length ? Buffer.concat([buffer, value]) : Buffer.from(value)
      // Consume as much of the buffer as can be understood.
      for (;;) {
        if (state === 'preamble') {
          const at = buffer.indexOf(delimiter)
          if (at < 0) {
            buffer = buffer.subarray(Math.max(0, buffer.length - delimiter.length))
            break
          }
          buffer = buffer.subarray(at + delimiter.length)
          state = 'headers'
        } else if (state === 'headers') {
          if (buffer.length < 2) break
          if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
            state = 'done'
            break
          }
          const end = buffer.indexOf('\r\n\r\n')
          if (end < 0) {
            if (buffer.length > MAX_HEADER_BYTES) throw bad('part headers too long')
            break
          }
          startPart(buffer.subarray(0, end).toString('utf8'))
          buffer = buffer.subarray(end + 4)
          state = 'body'
        } else if (state === 'body') {
          const at = buffer.indexOf(delimiter)
          if (at < 0) {
            // Keep what could be the start of a delimiter split across reads.
            const safe = buffer.length - delimiter.length
            if (safe > 0) {
              writeBody(buffer.subarray(0, safe))
              buffer = Buffer.from(buffer.subarray(safe))
            }
            break
          }
          writeBody(buffer.subarray(0, at))
          await endPart()
          buffer = buffer.subarray(at + delimiter.length)
          state = 'headers'
        } else break
      }
    }
  } catch (error) {
    await reader.cancel().catch(() => {})
    throw error
  } finally {
    if (part?.sink) await part.sink.end()
  }
  if (state !== 'done') throw bad('the body ended before its closing boundary')
  return { files, fields }
}
