import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * A read-only file system for espeak-ng's data, served from memory, that Emscripten mounts in place
 * of its NODEFS. Under NODEFS every lookup, stat, open and read of the engine's data was a system
 * call (more than 600 per sentence, see `lookup`), and every missing file an `ErrnoError` with a
 * demangled stack: together most of a short sentence's time. The tree is read from disk once per process; a file's bytes on its first open, then kept
 * (at most the 11 MB of the package's data, usually the few files one language needs).
 *
 * Files created under it (the engine's `-w` output) live in memory, one mount each, so that the WAV
 * the engine writes never goes through a typed array that MEMFS turns into a plain array of bytes
 * when it grows.
 */

// Emscripten's FS object and nodes, as text2wav's build exposes them (`Module.FS`): untyped.
type EmscriptenFS = any
type FSNode = any
type FSStream = any

const ENOENT = 2
const EPERM = 1
const EINVAL = 22
const DIR = 0o040000
const FILE = 0o100000
const EPOCH = new Date(0)

interface DataEntry {
  kind: 'data'
  mode: number
  size: number
  /** The file on disk, or the folder. */
  path: string
  children?: Map<string, DataEntry>
  /** The same children by their names in lower case (see `lookup`). */
  folded?: Map<string, DataEntry>
}

interface OutputEntry {
  kind: 'output'
  mode: number
  size: number
  bytes: Uint8Array
}

type Entry = DataEntry | OutputEntry

const trees = new Map<string, DataEntry>()
const fileBytes = new Map<string, Uint8Array>()

function readTree(path: string): DataEntry {
  const stat = statSync(path)
  if (!stat.isDirectory()) return { kind: 'data', mode: FILE | 0o444, size: stat.size, path }
  const children = new Map<string, DataEntry>()
  for (const name of readdirSync(path).sort()) children.set(name, readTree(join(path, name)))
  const folded = new Map([...children].map(([name, entry]) => [name.toLowerCase(), entry]))
  return { kind: 'data', mode: DIR | 0o755, size: 4096, path, children, folded }
}

function dataBytes(entry: DataEntry): Uint8Array {
  let bytes = fileBytes.get(entry.path)
  if (!bytes) {
    bytes = new Uint8Array(readFileSync(entry.path))
    fileBytes.set(entry.path, bytes)
  }
  return bytes
}

function contents(entry: Entry): Uint8Array {
  return entry.kind === 'output' ? entry.bytes : dataBytes(entry)
}

/** What one mount serves: the data tree (shared) and the files written to it (its own). */
export interface SpeechMount {
  /** The bytes written to `name` at the mount's root, if the engine wrote it. */
  output(name: string): Uint8Array | undefined
}

/**
 * Mounts `root` (a folder of espeak-ng's data, read once) at `mountpoint` of `FS`, replacing
 * whatever is mounted there.
 */
export function mountSpeechData(FS: EmscriptenFS, mountpoint: string, root: string): SpeechMount {
  let tree = trees.get(root)
  if (!tree) {
    tree = readTree(root)
    trees.set(root, tree)
  }
  const outputs = new Map<string, OutputEntry>()
  const rootEntries = tree.children!

  const createNode = (parent: FSNode | null, name: string, entry: Entry): FSNode => {
    const node = FS.createNode(parent, name, entry.mode, 0)
    node.node_ops = nodeOps
    node.stream_ops = streamOps
    node.entry = entry
    return node
  }

  /** A folder's names; the root's include the files written to this mount. */
  const namesOf = (node: FSNode): string[] => {
    const entry = node.entry as Entry
    if (entry.kind !== 'data' || !entry.children) return []
    return entry === tree ? [...rootEntries.keys(), ...outputs.keys()] : [...entry.children.keys()]
  }

  const nodeOps = {
    getattr(node: FSNode) {
      const entry = node.entry as Entry
      return { dev: 1, ino: node.id, mode: entry.mode, nlink: 1, uid: 0, gid: 0, rdev: 0, size: entry.size, atime: EPOCH, mtime: EPOCH, ctime: EPOCH, blksize: 4096, blocks: Math.ceil(entry.size / 4096) }
    },
    setattr(node: FSNode, attr: { size?: number }) {
      const entry = node.entry as Entry
      if (attr.size === undefined) return
      if (entry.kind !== 'output') throw new FS.ErrnoError(EPERM)
      entry.size = Math.min(entry.size, attr.size)
    },
    lookup(parent: FSNode, name: string) {
      const folder = parent.entry as Entry
      // espeak-ng lowercases a voice's name before it tries it as a file (`gmw/en-us` for
      // `gmw/en-US`); on a case-sensitive disk that fails and it reads all ~300 voice files to find
      // the voice by name, on every call. Names are matched as on a case-insensitive disk (no two
      // names in the data differ only by case), so the file is found at once: same voice, same
      // samples (all 106 voices compared).
      const entry: Entry | undefined =
        folder.kind === 'data' ? ((folder === tree ? outputs.get(name) : undefined) ?? folder.children?.get(name) ?? folder.folded?.get(name.toLowerCase())) : undefined
      if (!entry) throw FS.genericErrors[ENOENT]
      return createNode(parent, name, entry)
    },
    mknod(parent: FSNode, name: string, mode: number) {
      // Only plain files, only at the root: the engine's output.
      if (parent.entry !== tree || (mode & 0o170000) !== FILE || rootEntries.has(name)) throw new FS.ErrnoError(EPERM)
      const entry: OutputEntry = { kind: 'output', mode, size: 0, bytes: new Uint8Array(64 * 1024) }
      outputs.set(name, entry)
      return createNode(parent, name, entry)
    },
    readdir(node: FSNode) {
      return ['.', '..', ...namesOf(node)]
    },
    rename() {
      throw new FS.ErrnoError(EPERM)
    },
    unlink() {
      throw new FS.ErrnoError(EPERM)
    },
    rmdir() {
      throw new FS.ErrnoError(EPERM)
    },
    symlink() {
      throw new FS.ErrnoError(EPERM)
    },
    readlink() {
      throw new FS.ErrnoError(EINVAL)
    },
  }

  const streamOps = {
    open() {},
    close() {},
    read(stream: FSStream, buffer: Uint8Array, offset: number, length: number, position: number) {
      const entry = stream.node.entry as Entry
      const count = Math.min(length, entry.size - position)
      if (count <= 0) return 0
      new Uint8Array(buffer.buffer, buffer.byteOffset + offset, count).set(contents(entry).subarray(position, position + count))
      return count
    },
    write(stream: FSStream, buffer: Uint8Array, offset: number, length: number, position: number) {
      const entry = stream.node.entry as Entry
      if (entry.kind !== 'output') throw new FS.ErrnoError(EPERM)
      const end = position + length
      if (end > entry.bytes.length) {
        const grown = new Uint8Array(Math.max(end, entry.bytes.length * 2))
        grown.set(entry.bytes.subarray(0, entry.size))
        entry.bytes = grown
      }
      // Bytes between the old end and a seek past it read as zeros, as on disk.
      if (position > entry.size) entry.bytes.fill(0, entry.size, position)
      entry.bytes.set(new Uint8Array(buffer.buffer, buffer.byteOffset + offset, length), position)
      entry.size = Math.max(entry.size, end)
      return length
    },
    llseek(stream: FSStream, offset: number, whence: number) {
      let position = offset
      if (whence === 1) position += stream.position
      else if (whence === 2) position += (stream.node.entry as Entry).size
      if (position < 0) throw new FS.ErrnoError(EINVAL)
      return position
    },
  }

  const type = {
    mount: () => createNode(null, '/', tree),
  }
  try {
    FS.unmount(mountpoint)
  } catch {
    // Nothing was mounted there.
  }
  FS.mount(type, {}, mountpoint)
  return {
    output(name) {
      const entry = outputs.get(name)
      return entry ? entry.bytes.slice(0, entry.size) : undefined
    },
  }
}
