import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join, relative, sep } from 'node:path'
import ignore, { type Ignore } from 'ignore'
import { ApiClient, CliError } from '../client'

/** A file of the synced folder: its document id and the SHA-256 of its bytes. */
export interface LocalFile {
  id: string
  path: string
  size: number
  mtimeMs: number
  hash: string
}

export interface ScanOptions {
  include: string[]
  exclude: string[]
  prefix: string
}

/** Files that hold no text, skipped unless an --include names them (so a folder of notes with pictures syncs cleanly). */
const MEDIA = new Set(
  `png jpg jpeg gif webp bmp tif tiff ico heic svg psd mp3 wav ogg flac m4a aac mp4 mkv mov avi webm zip gz tgz bz2 xz 7z rar tar jar
  exe dll so dylib bin o a class wasm woff woff2 ttf otf eot iso dmg sqlite db lock`.split(/\s+/),
)

/** `--prefix docs` and `--prefix docs/` both put documents under `docs/`. */
export function normalizePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/\\/g, '/').replace(/^\/+/, '')
  return trimmed && !trimmed.endsWith('/') ? `${trimmed}/` : trimmed
}

/** A glob matches a relative path, or, when it has no `/`, the file's name anywhere (as in .gitignore). */
function matches(globs: Bun.Glob[], patterns: string[], rel: string): boolean {
  return globs.some((glob, i) => glob.match(rel) || (!patterns[i]!.includes('/') && glob.match(basename(rel))))
}

/** Hashes are kept per path with size and modification time, so a rescan reads only what changed. */
export type HashCache = Map<string, { size: number; mtimeMs: number; hash: string }>

/**
 * The files of `dir` to sync, by document id (`prefix` + path relative to `dir`, with `/`): walked
 * recursively, hidden files and folders and `node_modules` skipped, `.uagentignore` (gitignore
 * syntax, at the top of `dir`) and --exclude honoured, only --include matches kept when given (else
 * media and archives are skipped), empty files skipped; each hashed (SHA-256 of its bytes).
 */
export function scanFolder(dir: string, options: ScanOptions, cache: HashCache = new Map()): Map<string, LocalFile> {
  const ignoreFile = join(dir, '.uagentignore')
  const ignored: Ignore | null = existsSync(ignoreFile) ? ignore().add(readFileSync(ignoreFile, 'utf8')) : null
  const includes = options.include.map((p) => new Bun.Glob(p))
  const excludes = options.exclude.map((p) => new Bun.Glob(p))
  const files = new Map<string, LocalFile>()
  const walk = (folder: string) => {
    let entries
    try {
      entries = readdirSync(folder, { withFileTypes: true })
    } catch {
      return // gone while walking (a rename under watch): the next scan sees where it went
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
      const path = join(folder, entry.name)
      const rel = relative(dir, path).split(sep).join('/')
      if (entry.isDirectory()) {
        if (ignored?.ignores(`${rel}/`) || matches(excludes, options.exclude, `${rel}/`)) continue
        walk(path)
        continue
      }
      if (!entry.isFile()) continue
      if (ignored?.ignores(rel) || matches(excludes, options.exclude, rel)) continue
      if (includes.length ? !matches(includes, options.include, rel) : MEDIA.has(entry.name.split('.').pop()!.toLowerCase())) continue
      let stats
      try {
        stats = statSync(path)
      } catch {
        continue
      }
      if (stats.size === 0) continue
      let cached = cache.get(path)
      if (!cached || cached.size !== stats.size || cached.mtimeMs !== stats.mtimeMs) {
        let bytes
        try {
          bytes = readFileSync(path)
        } catch {
          continue
        }
        cached = { size: stats.size, mtimeMs: stats.mtimeMs, hash: new Bun.CryptoHasher('sha256').update(bytes).digest('hex') }
        cache.set(path, cached)
      }
      const id = `${options.prefix}${rel}`
      files.set(id, { id, path, size: stats.size, mtimeMs: stats.mtimeMs, hash: cached.hash })
    }
  }
  walk(dir)
  return files
}

/** The collection's documents under `prefix` (id → hash), 10,000 a request; a collection not there yet is empty. */
export async function remoteDocuments(client: ApiClient, collection: string, prefix: string): Promise<Map<string, string>> {
  const documents = new Map<string, string>()
  for (let offset = 0; ; ) {
    const query = new URLSearchParams({ view: 'hashes', limit: '10000', offset: String(offset) })
    if (prefix) query.set('prefix', prefix)
    let page: { documents: { id: string; contentHash: string }[]; hasMore: boolean }
    try {
      page = await client.json('GET', `/rag/collections/${encodeURIComponent(collection)}/documents?${query}`)
    } catch (error) {
      if (error instanceof CliError && error.code === 'NOT_FOUND' && offset === 0) return documents
      throw error
    }
    for (const document of page.documents) documents.set(document.id, document.contentHash)
    offset += page.documents.length
    if (!page.hasMore || page.documents.length === 0) return documents
  }
}

export interface SyncPlan {
  add: LocalFile[]
  change: LocalFile[]
  unchanged: number
  remove: string[]
}

/** What to send and remove: new files, files whose hash differs, and (with `remove`) documents whose file is gone. */
export function planSync(local: Map<string, LocalFile>, remote: Map<string, string>, remove: boolean): SyncPlan {
  const add: LocalFile[] = []
  const change: LocalFile[] = []
  let unchanged = 0
  // A file the server splits into several documents (an .mbox: `<file id>#<Message-ID>`, each
  // carrying the file's hash) is held when any of them is.
  const owners = new Map<string, string>()
  for (const id of remote.keys()) {
    for (let at = id.indexOf('#'); at > 0; at = id.indexOf('#', at + 1)) {
      const owner = id.slice(0, at)
      if (local.has(owner) && !remote.has(owner)) owners.set(id, owner)
    }
  }
  // Its hash as the server holds it: the file's, unless one of its documents holds another.
  const partHash = new Map<string, string>()
  for (const [id, owner] of owners) if (!partHash.has(owner) || remote.get(id) !== local.get(owner)!.hash) partHash.set(owner, remote.get(id)!)
  for (const file of local.values()) {
    const hash = remote.get(file.id) ?? partHash.get(file.id)
    if (hash === undefined) add.push(file)
    else if (hash !== file.hash) change.push(file)
    else unchanged++
  }
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  return {
    add: add.sort(byId),
    change: change.sort(byId),
    unchanged,
    remove: remove ? [...remote.keys()].filter((id) => !local.has(id) && !owners.has(id)).sort() : [],
  }
}

/** Runs `work` over `items`, `limit` at a time. */
export async function inPool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await work(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
}
