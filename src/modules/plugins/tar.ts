import { lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
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
