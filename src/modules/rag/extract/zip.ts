import { Inflate, strFromU8, zipSync } from 'fflate'
import { Deadline, LIMITS, megabytes } from './limits'
import { ExtractionError } from './types'

interface Member {
  name: string
  method: number
  compressedSize: number
  size: number
  localOffset: number
}

/** Compressed bytes inflated at a time: at most ~4 MB come out of one slice before the running count looks. */
const INPUT_SLICE = 4 * 1024

/**
 * A zip archive (docx, xlsx, pptx, epub, odt, ods, odp) read defensively. Opening it reads only
 * the central directory and refuses the file when its members declare more than
 * LIMITS.archiveBytes in all, before anything is inflated; reading a member inflates it in
 * slices with a running count, and stops as soon as it passes its declared size (a member that
 * lies about it) or the archive's total passes the limit.
 */
export class SafeZip {
  private readonly members = new Map<string, Member>()
  private inflated = 0

  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
    private readonly deadline?: Deadline,
  ) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const eocd = findEndOfDirectory(view)
    if (eocd < 0) throw new ExtractionError(`not a readable ${what} (it is not a zip archive)`)
    let entries = view.getUint16(eocd + 10, true)
    let offset = view.getUint32(eocd + 16, true)
    if ((entries === 0xffff || offset === 0xffffffff) && eocd >= 20 && view.getUint32(eocd - 20, true) === 0x07064b50) {
      const zip64 = Number(view.getBigUint64(eocd - 12, true))
      if (zip64 + 56 > bytes.length || view.getUint32(zip64, true) !== 0x06064b50) throw new ExtractionError(`not a readable ${what} (a damaged zip directory)`)
      entries = Number(view.getBigUint64(zip64 + 32, true))
      offset = Number(view.getBigUint64(zip64 + 48, true))
    }
    let declared = 0
    for (let i = 0; i < entries; i++) {
      if (offset + 46 > bytes.length || view.getUint32(offset, true) !== 0x02014b50) throw new ExtractionError(`not a readable ${what} (a damaged zip directory)`)
      const flags = view.getUint16(offset + 8, true)
      const nameLength = view.getUint16(offset + 28, true)
      const extraLength = view.getUint16(offset + 30, true)
      const commentLength = view.getUint16(offset + 32, true)
      const member: Member = {
        name: strFromU8(bytes.subarray(offset + 46, offset + 46 + nameLength)),
        method: view.getUint16(offset + 10, true),
        compressedSize: view.getUint32(offset + 20, true),
        size: view.getUint32(offset + 24, true),
        localOffset: view.getUint32(offset + 42, true),
      }
      readZip64Extra(view, offset + 46 + nameLength, extraLength, member)
      if (flags & 1) throw new ExtractionError(`encrypted ${what}: it needs a password to open (remove the protection and upload it again)`)
      declared += member.size
      if (declared > LIMITS.archiveBytes) {
        throw new ExtractionError(`too large: the ${what}'s parts expand to more than ${megabytes(LIMITS.archiveBytes)} (a zip bomb, or far too big to read)`)
      }
      this.members.set(member.name, member)
      offset += 46 + nameLength + extraLength + commentLength
    }
  }

  names(): string[] {
    return [...this.members.keys()]
  }

  has(name: string): boolean {
    return this.members.has(name)
  }

  /** A member's bytes, or null when the archive has no such member. */
  read(name: string): Uint8Array | null {
    const member = this.members.get(name)
    if (!member) return null
    this.deadline?.check()
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength)
    const local = member.localOffset
    if (local + 30 > this.bytes.length || view.getUint32(local, true) !== 0x04034b50) throw new ExtractionError(`not a readable ${this.what} (a damaged zip member)`)
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true)
    const data = this.bytes.subarray(start, Math.min(this.bytes.length, start + member.compressedSize))
    if (member.method === 0) {
      this.count(member, data.length)
      this.inflated += data.length
      return data.slice()
    }
    if (member.method !== 8) throw new ExtractionError(`not a readable ${this.what} (zip compression method ${member.method} is not supported)`)
    const out = new Uint8Array(member.size)
    let length = 0
    const inflate = new Inflate((chunk) => {
      this.count(member, length + chunk.length)
      out.set(chunk, length)
      length += chunk.length
    })
    try {
      for (let at = 0; at < data.length; at += INPUT_SLICE) {
        inflate.push(data.subarray(at, at + INPUT_SLICE), at + INPUT_SLICE >= data.length)
        this.deadline?.check()
      }
    } catch (error) {
      if (error instanceof ExtractionError) throw error
      throw new ExtractionError(`not a readable ${this.what} (a damaged zip member: ${(error as Error).message})`)
    }
    this.inflated += length
    return length === out.length ? out : out.subarray(0, length)
  }

  /** A member as UTF-8 text, or null. */
  text(name: string): string | null {
    const bytes = this.read(name)
    return bytes && new TextDecoder().decode(bytes)
  }

  /**
   * The same archive with every member inflated (checked as above) and stored uncompressed: what
   * a library that unzips by itself (mammoth, exceljs) is given, so it cannot meet a bomb.
   */
  repack(filter: (name: string) => boolean = () => true): Uint8Array {
    const files: Record<string, [Uint8Array, { level: 0 }]> = {}
    for (const name of this.members.keys()) {
      if (name.endsWith('/') || !filter(name)) continue
      files[name] = [this.read(name)!, { level: 0 }]
    }
    return zipSync(files)
  }

  private count(member: Member, length: number): void {
    if (length > member.size) throw new ExtractionError(`not a readable ${this.what}: its part ${member.name} holds more than its declared size (a zip bomb)`)
    if (this.inflated + length > LIMITS.archiveBytes) throw new ExtractionError(`too large: the ${this.what}'s parts expand to more than ${megabytes(LIMITS.archiveBytes)}`)
  }
}

function findEndOfDirectory(view: DataView): number {
  const last = view.byteLength - 22
  for (let at = last; at >= 0 && at >= last - 65535; at--) {
    if (view.getUint32(at, true) === 0x06054b50) return at
  }
  return -1
}

/** Sizes and offset above 4 GiB live in the zip64 extra field (id 1), in this order, when the 32-bit field is all ones. */
function readZip64Extra(view: DataView, at: number, length: number, member: Member): void {
  const end = at + length
  while (at + 4 <= end) {
    const id = view.getUint16(at, true)
    const size = view.getUint16(at + 2, true)
    if (id === 1) {
      let field = at + 4
      const next = () => {
        const value = field + 8 <= at + 4 + size ? Number(view.getBigUint64(field, true)) : 0
        field += 8
        return value
      }
      if (member.size === 0xffffffff) member.size = next()
      if (member.compressedSize === 0xffffffff) member.compressedSize = next()
      if (member.localOffset === 0xffffffff) member.localOffset = next()
      return
    }
    at += 4 + size
  }
}
