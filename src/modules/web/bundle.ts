import { createHash } from 'node:crypto'
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'

/** One built file of the web app, held in memory with its gzip form. */
export interface WebAsset {
  name: string
  type: string
  body: Uint8Array<ArrayBuffer>
  gzip: Uint8Array<ArrayBuffer>
  etag: string
}

export interface BuiltApp {
  hash: string
  /** The page at /app (links the hashed entry script and stylesheet). */
  page: WebAsset
  assets: Map<string, WebAsset>
}

const ROOT = join(import.meta.dir, '../../..')
export const WEB_SOURCES = join(ROOT, 'web')
const CACHES = [join(ROOT, 'node_modules/.cache/uagent-web'), join(tmpdir(), `uagent-web-${process.getuid?.() ?? 'user'}`)]
// The bundle depends on the sources and on the locked library versions.
const INPUTS = [join(ROOT, 'bun.lock'), join(ROOT, 'package.json')]

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
}

function sourceFiles(dir: string): string[] {
  const files: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...sourceFiles(path))
    else files.push(path)
  }
  return files.sort()
}

/** A hash of every web source and the lockfile: the cache key of a build. */
export function sourcesHash(dir = WEB_SOURCES): string {
  const hash = createHash('sha256')
  for (const file of [...sourceFiles(dir), ...INPUTS.filter(existsSync)]) {
    hash.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0')
  }
  return hash.digest('hex').slice(0, 16)
}

function asset(name: string, body: Uint8Array<ArrayBuffer>): WebAsset {
  const extension = name.slice(name.lastIndexOf('.'))
  return {
    name,
    type: TYPES[extension] ?? 'application/octet-stream',
    body,
    gzip: Bun.gzipSync(body, { level: 9 }),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  }
}

function pageHtml(script: string, style: string | undefined): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Universal Agent</title>
<link rel="icon" href="/app/assets/icon.svg" type="image/svg+xml">
${style ? `<link rel="stylesheet" href="/app/assets/${style}">\n` : ''}<script type="module" src="/app/assets/${script}"></script>
</head>
<body>
<div id="app"><noscript>Universal Agent's web app needs JavaScript.</noscript></div>
</body>
</html>
`
}

/** Runs Bun's bundler on web/main.tsx into `outdir`: hashed file names, minified, split. */
async function bundle(outdir: string): Promise<void> {
  const result = await Bun.build({
    entrypoints: [join(WEB_SOURCES, 'main.tsx')],
    outdir,
    target: 'browser',
    format: 'esm',
    splitting: true,
    minify: true,
    naming: { entry: '[name]-[hash].[ext]', chunk: 'chunk-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
  })
  if (!result.success) throw new Error(`web app build failed:\n${result.logs.map(String).join('\n')}`)
  const entry = result.outputs.find((output) => output.kind === 'entry-point' && output.path.endsWith('.js'))!
  const style = result.outputs.find((output) => output.path.endsWith('.css'))
  writeFileSync(join(outdir, 'index.html'), pageHtml(basename(entry.path), style && basename(style.path)))
  for (const file of readdirSync(join(WEB_SOURCES, 'public'))) writeFileSync(join(outdir, file), readFileSync(join(WEB_SOURCES, 'public', file)))
}

function load(dir: string, hash: string): BuiltApp {
  const assets = new Map<string, WebAsset>()
  let page: WebAsset | undefined
  for (const name of readdirSync(dir)) {
    const built = asset(name, new Uint8Array(readFileSync(join(dir, name))))
    if (name === 'index.html') page = built
    else assets.set(name, built)
  }
  if (!page) throw new Error(`web app build in ${dir} has no index.html`)
  return { hash, page, assets }
}

/**
 * The web app's bundle: built once per version of the sources (hash of web/ and the lockfile)
 * into node_modules/.cache/uagent-web/<hash> (or the temp dir when node_modules is read-only),
 * and reused by every later start until they change.
 */
export class WebBundle {
  private built: Promise<BuiltApp> | null = null

  constructor(private readonly log: (line: string) => void = () => {}) {}

  /** Starts the build (or the load of a cached one); every caller shares the one promise. */
  ready(): Promise<BuiltApp> {
    this.built ??= this.prepare()
    // A failed build is retried on the next request rather than remembered.
    this.built.catch(() => {
      this.built = null
    })
    return this.built
  }

  private async prepare(): Promise<BuiltApp> {
    const hash = sourcesHash()
    for (const cache of CACHES) if (existsSync(join(cache, hash, 'index.html'))) return load(join(cache, hash), hash)
    // The first cache folder that can be written: node_modules may be read-only (a system-wide install).
    const cache = CACHES.find((folder) => {
      try {
        mkdirSync(folder, { recursive: true })
        accessSync(folder, constants.W_OK)
        return true
      } catch {
        return false
      }
    })
    if (!cache) throw new Error(`no writable folder for the web app's build (tried ${CACHES.join(', ')})`)
    const dir = join(cache, hash)
    const started = performance.now()
    // Built beside the final folder and renamed into place: a second process never sees half a build.
    const partial = `${dir}.${process.pid}.${Date.now()}.tmp`
    mkdirSync(partial, { recursive: true })
    try {
      await bundle(partial)
      if (!existsSync(join(dir, 'index.html'))) {
        rmSync(dir, { recursive: true, force: true })
        renameSync(partial, dir)
      }
    } finally {
      rmSync(partial, { recursive: true, force: true })
    }
    this.prune(cache, hash)
    this.log(`web app built in ${Math.round(performance.now() - started)} ms (${hash})`)
    return load(dir, hash)
  }

  /** Older builds are removed, keeping the cache to the current sources. */
  private prune(cache: string, keep: string): void {
    for (const name of readdirSync(cache)) {
      const path = join(cache, name)
      if (name !== keep && !name.endsWith('.tmp') && statSync(path).isDirectory()) rmSync(path, { recursive: true, force: true })
    }
  }
}
