import { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream, existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { createGzip } from 'node:zlib'
import * as sqliteVec from 'sqlite-vec'
import { schemaVersion } from '../../db'
import { TAR_END, tarHeader, tarPadding } from './archive'

export interface SnapshotRequest {
  dataDir: string
  dbPath: string
  /** The request records' database (analytics.db), copied beside it when given. */
  analyticsPath?: string
  /** A pg_dump (custom format) of the server's PostgreSQL database, archived as postgres.dump. */
  postgresDump?: string
  /** Where the .tar.gz goes (written as <file>.partial, then renamed). */
  outFile: string
  serverVersion: string
}

export interface ManifestFile {
  path: string
  size: number
  sha256: string
}

export interface Manifest {
  format: 'universal-agent-backup'
  formatVersion: 1
  createdAt: string
  serverVersion: string
  bunVersion: string
  schemaVersion: number
  files: ManifestFile[]
}

/** Folders of the data dir that travel with the database: installed plugins and stored audio. */
export const DATA_FOLDERS = ['plugins', 'audio']

function* walk(root: string, dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(root, full)
    else if (entry.isFile()) yield relative(root, full).split('\\').join('/')
  }
}

/**
 * Makes a consistent backup of a live data dir: `VACUUM INTO` on its own connection (a read
 * transaction: the server's writers go on meanwhile, and the copy holds every write committed
 * before it started), likewise of the request records' analytics.db, then one .tar.gz with those copies, the key file, installed plugins, stored
 * audio and a manifest of versions and SHA-256 checksums (written last). Runs in a worker thread.
 */
/** A consistent copy of a live database file (a read transaction: its writers go on meanwhile). */
function vacuumInto(path: string, copy: string): void {
  const source = new Database(path, { readonly: true })
  try {
    source.run('PRAGMA busy_timeout = 10000')
    sqliteVec.load(source)
    source.run('VACUUM INTO ?', [copy])
  } finally {
    source.close()
  }
}

export async function writeSnapshot(request: SnapshotRequest): Promise<{ size: number; manifest: Manifest }> {
  const copy = join(dirname(request.outFile), `.snapshot-${crypto.randomUUID()}.db`)
  const recordsCopy = join(dirname(request.outFile), `.snapshot-${crypto.randomUUID()}-analytics.db`)
  const partial = `${request.outFile}.partial`
  try {
    vacuumInto(request.dbPath, copy)
    const records = request.analyticsPath && existsSync(request.analyticsPath)
    if (records) vacuumInto(request.analyticsPath!, recordsCopy)
    const snapshot = new Database(copy, { readonly: true })
    let version: number
    try {
      version = schemaVersion(snapshot)
    } finally {
      snapshot.close()
    }
    const entries: { path: string; source: string }[] = [{ path: 'uagent.db', source: copy }]
    if (records) entries.push({ path: 'analytics.db', source: recordsCopy })
    if (request.postgresDump) entries.push({ path: 'postgres.dump', source: request.postgresDump })
    const key = join(request.dataDir, 'jwt-secret')
    if (existsSync(key)) entries.push({ path: 'jwt-secret', source: key })
    for (const folder of DATA_FOLDERS) {
      const root = join(request.dataDir, folder)
      if (existsSync(root) && statSync(root).isDirectory()) for (const path of walk(request.dataDir, root)) entries.push({ path, source: join(request.dataDir, path) })
    }

    // Level 1: database pages of embeddings barely compress, and speed is what a live backup needs.
    const gzip = createGzip({ level: 1 })
    const out = createWriteStream(partial, { mode: 0o600 })
    const done = new Promise<void>((resolve, reject) => {
      out.on('finish', resolve)
      out.on('error', reject)
      gzip.on('error', reject)
    })
    gzip.pipe(out)
    const write = async (chunk: Uint8Array) => {
      if (!gzip.write(chunk)) await new Promise((resolve) => gzip.once('drain', resolve))
    }
    // Paced: after every 20 ms of work the worker rests 10 ms, so that on a small machine the
    // server's own threads keep a share of the CPU while a large backup runs.
    let busySince = performance.now()
    const pace = async () => {
      if (performance.now() - busySince < 20) return
      await Bun.sleep(10)
      busySince = performance.now()
    }
    const files: ManifestFile[] = []
    for (const entry of entries) {
      const stats = statSync(entry.source)
      await write(tarHeader(entry.path, stats.size, stats.mtime))
      const hash = createHash('sha256')
      let size = 0
      for await (const chunk of createReadStream(entry.source, { highWaterMark: 256 * 1024 })) {
        hash.update(chunk as Buffer)
        size += (chunk as Buffer).length
        await write(chunk as Buffer)
        await pace()
      }
      if (size !== stats.size) throw new Error(`${entry.path} changed size while it was archived`)
      await write(tarPadding(size))
      files.push({ path: entry.path, size, sha256: hash.digest('hex') })
    }
    const manifest: Manifest = {
      format: 'universal-agent-backup',
      formatVersion: 1,
      createdAt: new Date().toISOString(),
      serverVersion: request.serverVersion,
      bunVersion: Bun.version,
      schemaVersion: version,
      files,
    }
    const manifestBytes = new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`)
    await write(tarHeader('manifest.json', manifestBytes.length, new Date()))
    await write(manifestBytes)
    await write(tarPadding(manifestBytes.length))
    await write(TAR_END)
    gzip.end()
    await done
    renameSync(partial, request.outFile)
    return { size: statSync(request.outFile).size, manifest }
  } finally {
    rmSync(copy, { force: true })
    rmSync(recordsCopy, { force: true })
    rmSync(partial, { force: true })
  }
}
