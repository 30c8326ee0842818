import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { gunzipSync } from 'node:zlib'

/** Why an archive or a folder was refused; its message is shown to the admin as is. */
export class UnsafeArchiveError extends Error {}

const MAX_UNPACKED_BYTES = 256 * 1024 * 1024
const MAX_ENTRIES = 20_000

function cString(block: Uint8Array, start: number, length: number): string {
  const field = block.subarray(start, start + length)
  const end = field.indexOf(0)
  return new TextDecoder().decode(end === -1 ? field : field.subarray(0, end))
}

function octal(block: Uint8Array, start: number, length: number): number {
  // GNU base-256 for large sizes: the high bit of the first byte is set.
  if (block[start]! & 0x80) {
    let value = 0
    for (let i = start + 1; i < start + length; i++) value = value * 256 + block[i]!
    return value
  }
  const text = cString(block, start, length).trim()
  return text ? parseInt(text, 8) : 0
}

function paxRecords(data: Uint8Array): Record<string, string> {
  const text = new TextDecoder().decode(data)
  const records: Record<string, string> = {}
  let at = 0
  while (at < text.length) {
    const space = text.indexOf(' ', at)
    if (space === -1) break
    const length = Number(text.slice(at, space))
    if (!Number.isInteger(length) || length <= 0) break
    const record = text.slice(space + 1, at + length - 1)
    const equals = record.indexOf('=')
    if (equals > 0) records[record.slice(0, equals)] = record.slice(equals + 1)
    at += length
  }
  return records
}

/** An entry's path made relative and checked: no absolute path, no "..", no NUL. */
function safeEntryPath(raw: string): string | null {
  const path = raw.replace(/\\/g, '/')
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.includes('\0')) {
    throw new UnsafeArchiveError(`an archive entry has an absolute path (".../${path.split('/').filter(Boolean).pop() ?? ''}")`)
  }
  const segments = path.split('/').filter((s) => s !== '' && s !== '.')
  if (segments.includes('..')) throw new UnsafeArchiveError(`archive entry "${raw}" points outside the plugin's folder ("..")`)
  return segments.length ? segments.join('/') : null
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep)
}

/** Makes `dir` and returns its real path; refused when a symlink would lead it outside `root`. */
function ensureDir(root: string, dir: string, raw: string): string {
  let existing = dir
  while (!exists(existing)) existing = dirname(existing)
  if (!inside(root, realpathSync(existing))) throw new UnsafeArchiveError(`archive entry "${raw}" would be written outside the plugin's folder through a symlink`)
  mkdirSync(dir, { recursive: true })
  const real = realpathSync(dir)
  if (!inside(root, real)) throw new UnsafeArchiveError(`archive entry "${raw}" would be written outside the plugin's folder through a symlink`)
  return real
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/**
 * Unpacks a .tgz into `dest` (an existing, empty folder), refusing entries with absolute paths
 * or "..", symlinks that point outside, hard links and devices. Size and entry count are bounded.
 */
export function extractTgz(archive: Uint8Array, dest: string): void {
  let data: Buffer
  try {
    data = gunzipSync(archive, { maxOutputLength: MAX_UNPACKED_BYTES })
  } catch (error) {
    const tooLarge = (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || /larger than/i.test((error as Error).message)
    throw new UnsafeArchiveError(tooLarge ? 'the archive unpacks to more than 256 MB' : 'not a gzip-compressed tar archive (.tgz)')
  }
  const root = realpathSync(dest)
  let offset = 0
  let entries = 0
  let longName: string | null = null
  let longLink: string | null = null
  let pax: Record<string, string> = {}
  let sawHeader = false
  while (offset + 512 <= data.length) {
    const header = data.subarray(offset, offset + 512)
    if (header.every((byte) => byte === 0)) break
    let checksum = 0
    for (let i = 0; i < 512; i++) checksum += i >= 148 && i < 156 ? 32 : header[i]!
    if (checksum !== octal(header, 148, 8)) throw new UnsafeArchiveError('not a valid tar archive (bad header checksum)')
    sawHeader = true
    if (++entries > MAX_ENTRIES) throw new UnsafeArchiveError(`the archive has more than ${MAX_ENTRIES} entries`)
    const size = octal(header, 124, 12)
    const type = String.fromCharCode(header[156]!)
    const magic = cString(header, 257, 6)
    let name = cString(header, 0, 100)
    if (magic === 'ustar') {
      const prefix = cString(header, 345, 155)
      if (prefix) name = `${prefix}/${name}`
    }
    offset += 512
    if (offset + size > data.length) throw new UnsafeArchiveError('the archive is cut short')
    const body = data.subarray(offset, offset + size)
    offset += Math.ceil(size / 512) * 512
    if (type === 'x') {
      pax = paxRecords(body)
      continue
    }
    if (type === 'g') continue
    if (type === 'L') {
      longName = cString(body, 0, body.length)
      continue
    }
    if (type === 'K') {
      longLink = cString(body, 0, body.length)
      continue
    }
    const rawPath = pax.path ?? longName ?? name
    const linkTarget = pax.linkpath ?? longLink ?? cString(header, 157, 100)
    pax = {}
    longName = null
    longLink = null
    const path = safeEntryPath(rawPath)
    if (path === null) continue
    const target = resolve(root, path)
    if (!inside(root, target)) throw new UnsafeArchiveError(`archive entry "${rawPath}" points outside the plugin's folder`)
    if (type === '0' || type === '\0' || type === '7') {
      const dir = ensureDir(root, dirname(target), rawPath)
      const file = join(dir, basename(target))
      if (exists(file) && lstatSync(file).isSymbolicLink()) throw new UnsafeArchiveError(`archive entry "${rawPath}" would write through a symlink`)
      writeFileSync(file, body, { mode: 0o644 })
    } else if (type === '5') {
      ensureDir(root, target, rawPath)
    } else if (type === '2') {
      if (!linkTarget || isAbsolute(linkTarget) || linkTarget.startsWith('\\')) throw new UnsafeArchiveError(`symlink "${rawPath}" points to an absolute path; links must stay inside the plugin's folder`)
      const dir = ensureDir(root, dirname(target), rawPath)
      if (!inside(root, resolve(dir, linkTarget))) throw new UnsafeArchiveError(`symlink "${rawPath}" points outside the plugin's folder`)
      if (exists(join(dir, basename(target)))) throw new UnsafeArchiveError(`archive entry "${rawPath}" appears twice`)
      symlinkSync(linkTarget, join(dir, basename(target)))
    } else if (type === '1') {
      throw new UnsafeArchiveError(`archive entry "${rawPath}" is a hard link; plugins may not hold hard links`)
    } else {
      throw new UnsafeArchiveError(`archive entry "${rawPath}" is a device, FIFO or other special file`)
    }
  }
  if (!sawHeader) throw new UnsafeArchiveError('the archive is empty')
  assertContained(root)
}

/**
 * Every symlink under `root` must resolve to a place inside it (checked on the real file system,
 * so chains of links cannot climb out); throws UnsafeArchiveError otherwise.
 */
export function assertContained(rootPath: string): void {
  const root = realpathSync(rootPath)
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isSymbolicLink()) {
        let real: string
        try {
          real = realpathSync(path)
        } catch {
          throw new UnsafeArchiveError(`symlink "${relative(root, path)}" points to nothing inside the plugin's folder (${readlinkSync(path)})`)
        }
        if (!inside(root, real)) throw new UnsafeArchiveError(`symlink "${relative(root, path)}" points outside the plugin's folder`)
      } else if (entry.isDirectory()) walk(path)
    }
  }
  walk(root)
}

const encoder = new TextEncoder()

/** One ustar header block; `name` and `link` are cut to their fields (longer ones travel in a GNU L/K entry before it). */
function tarHeader(name: Uint8Array, type: string, size: number, link: Uint8Array): Uint8Array {
  const block = new Uint8Array(512)
  const text = (value: string, at: number) => block.set(encoder.encode(value), at)
  block.set(name.subarray(0, 100), 0)
  text(`${(type === '5' ? 0o755 : 0o644).toString(8).padStart(7, '0')}\0`, 100)
  text('0000000\0', 108)
  text('0000000\0', 116)
  text(`${size.toString(8).padStart(11, '0')}\0`, 124)
  text('00000000000\0', 136)
  text(type, 156)
  block.set(link.subarray(0, 100), 157)
  text('ustar\0' + '00', 257)
  block.fill(32, 148, 156)
  let sum = 0
  for (const byte of block) sum += byte
  text(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
  return block
}

function padded(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(body.length / 512) * 512)
  out.set(body)
  return out
}

/** The blocks of one entry, with GNU long-name (L) and long-link (K) entries for what does not fit in 100 bytes. */
function tarEntry(path: string, type: string, body: Uint8Array, link = ''): Uint8Array[] {
  const name = encoder.encode(path)
  const target = encoder.encode(link)
  const blocks: Uint8Array[] = []
  for (const [kind, value] of [['L', name], ['K', target]] as const) {
    if (value.length <= 100) continue
    const data = new Uint8Array(value.length + 1)
    data.set(value)
    blocks.push(tarHeader(encoder.encode('././@LongLink'), kind, data.length, new Uint8Array(0)), padded(data))
  }
  blocks.push(tarHeader(name, type, body.length, target), padded(body))
  return blocks
}

/**
 * Packs a plugin's folder (files, folders and symlinks; nothing else) into a .tgz that extractTgz
 * unpacks as it was. Refused (UnsafeArchiveError) beyond extractTgz's own limits, so that what is
 * packed can always be unpacked.
 */
export function packTgz(rootPath: string): Uint8Array {
  const blocks: Uint8Array[] = []
  let entries = 0
  let bytes = 0
  const walk = (dir: string, prefix: string) => {
    const children = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of children) {
      const path = join(dir, entry.name)
      const relativePath = prefix ? `${prefix}/${entry.name}` : entry.name
      if (++entries > MAX_ENTRIES) throw new UnsafeArchiveError(`the plugin has more than ${MAX_ENTRIES} files and folders`)
      if (entry.isSymbolicLink()) {
        blocks.push(...tarEntry(relativePath, '2', new Uint8Array(0), readlinkSync(path)))
      } else if (entry.isDirectory()) {
        blocks.push(...tarEntry(`${relativePath}/`, '5', new Uint8Array(0)))
        walk(path, relativePath)
      } else if (entry.isFile()) {
        const body = readFileSync(path)
        bytes += body.length
        if (bytes > MAX_UNPACKED_BYTES) throw new UnsafeArchiveError('the plugin with its dependencies is larger than 256 MB')
        blocks.push(...tarEntry(relativePath, '0', body))
      }
    }
  }
  walk(realpathSync(rootPath), '')
  blocks.push(new Uint8Array(1024))
  return Bun.gzipSync(Buffer.concat(blocks))
}
