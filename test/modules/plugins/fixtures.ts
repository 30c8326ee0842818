import { describe } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { findNode } from '../../../src/modules/plugins/sandbox'

/**
 * What running installed plugins needs here (Node.js >= 20, git, npm); tests that need it are
 * skipped with the reason printed where it is missing.
 */
export function pluginToolsMissing(): string | null {
  const node = findNode(process.env.UAGENT_NODE_PATH)
  if (!node.ok) return node.reason
  if (!Bun.which('git')) return 'git is not installed'
  if (!Bun.which('npm')) return 'npm is not installed'
  return null
}

/** `describe`, or `describe.skip` with the reason printed when Node.js >= 20, git or npm is missing. */
export function describeWithPluginTools(name: string, body: () => void): void {
  const missing = pluginToolsMissing()
  if (missing) {
    console.log(`skipping "${name}": ${missing}`)
    describe.skip(name, body)
  } else describe(name, body)
}

export interface TarEntry {
  path: string
  content?: string
  /** A symlink's target. */
  link?: string
  type?: 'file' | 'dir' | 'symlink'
}

function header(entry: TarEntry, size: number): Uint8Array {
  const block = new Uint8Array(512)
  const put = (text: string, at: number, length: number) => block.set(new TextEncoder().encode(text).subarray(0, length), at)
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0')
  put(entry.path, 0, 100)
  put(octal(entry.type === 'dir' ? 0o755 : 0o644, 8), 100, 8)
  put(octal(0, 8), 108, 8)
  put(octal(0, 8), 116, 8)
  put(octal(size, 12), 124, 12)
  put(octal(Math.floor(Date.now() / 1000), 12), 136, 12)
  put(entry.type === 'dir' ? '5' : entry.type === 'symlink' ? '2' : '0', 156, 1)
  if (entry.link) put(entry.link, 157, 100)
  put('ustar\u000000', 257, 8)
  block.fill(32, 148, 156)
  const sum = block.reduce((a, b) => a + b, 0)
  put(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8)
  return block
}

/** A gzip-compressed tar archive holding exactly `entries` (paths taken as given, even "../x"). */
export function makeTgz(entries: TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = []
  for (const entry of entries) {
    const body = new TextEncoder().encode(entry.content ?? '')
    parts.push(header(entry, entry.type === 'file' || entry.type === undefined ? body.length : 0))
    if ((entry.type ?? 'file') === 'file') {
      const padded = new Uint8Array(Math.ceil(body.length / 512) * 512)
      padded.set(body)
      parts.push(padded)
    }
  }
  parts.push(new Uint8Array(1024))
  return Bun.gzipSync(Buffer.concat(parts))
}

export interface PluginFiles {
  manifest: Record<string, unknown>
  files: Record<string, string>
}

/** A plugin named `name` with the given actions (name → function source) written as CommonJS. */
export function pluginFiles(name: string, actions: Record<string, string>, options: { version?: string; extra?: Record<string, string>; dependencies?: Record<string, string> } = {}): PluginFiles {
  const manifest = {
    name,
    version: options.version ?? '1.0.0',
    description: `Test plugin ${name}`,
    category: 'testing',
    permissions: [],
    main: 'index.js',
    actions: Object.fromEntries(
      Object.keys(actions).map((action) => [action, { description: `${action} action`, parameters: { type: 'object', properties: {}, additionalProperties: true } }]),
    ),
  }
  const index = Object.entries(actions)
    .map(([action, source]) => `exports.${action} = ${source}`)
    .join('\n')
  const files: Record<string, string> = { 'plugin.json': JSON.stringify(manifest, null, 2), 'index.js': index, ...options.extra }
  if (options.dependencies) files['package.json'] = JSON.stringify({ name, version: manifest.version, main: 'index.js', dependencies: options.dependencies })
  return { manifest, files }
}

export function writePlugin(dir: string, plugin: PluginFiles): void {
  for (const [path, content] of Object.entries(plugin.files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
}

export function tgzOf(plugin: PluginFiles, prefix = ''): Uint8Array {
  return makeTgz(Object.entries(plugin.files).map(([path, content]) => ({ path: `${prefix}${path}`, content })))
}

/** A git repository holding `plugin`, committed and tagged `tag`. */
export function gitRepo(dir: string, plugin: PluginFiles, tag: string): void {
  mkdirSync(dir, { recursive: true })
  writePlugin(dir, plugin)
  const git = (...args: string[]) => {
    const result = Bun.spawnSync(['git', '-c', 'user.email=test@example.com', '-c', 'user.name=Test', '-c', 'init.defaultBranch=main', ...args], { cwd: dir })
    if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`)
  }
  git('init', '-q')
  git('add', '.')
  git('commit', '-qm', 'plugin')
  git('tag', tag)
}
