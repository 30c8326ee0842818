import { storageFull } from '../../core/storage'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { join, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { AppError } from '../../core/errors'
import { type Manifest, ManifestError, parseManifest } from './manifest'
import type { MaybePromise } from '../../db/maybe-promise'
import type { PluginRow } from './store'
import { assertContained, extractTgz, UnsafeArchiveError } from './tar'

export interface InstallRequest {
  source: 'npm' | 'git' | 'url'
  package: string
  version: string
  /** For `url`: the archive's expected SHA-256 (hex), checked before anything is unpacked. */
  sha256?: string
}

export interface InstallHooks {
  pluginsDir: string
  log: (line: string) => void
  /** Reserves a name or throws CONFLICT. */
  claim: (name: string) => void
  release: (name: string) => void
  /** Writes the database row once the folder is in place. */
  record: (name: string, version: string) => MaybePromise<PluginRow>
}

const MAX_ARCHIVE_BYTES = 100 * 1024 * 1024
const DOWNLOAD_TIMEOUT_MS = 120_000
const COMMAND_TIMEOUT_MS = 300_000
const NPM_NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/
/** Folders of unfinished work in the plugins folder (installs, unpacking): removed at start. */
export const STAGING_PREFIX = '.staging-'

class InstallFailure extends Error {}

const fail = (message: string): never => {
  throw new InstallFailure(message)
}

/** The environment of git and npm: the server's, without any UAGENT_* variable. */
function toolEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !key.startsWith('UAGENT_')) env[key] = value
  return { ...env, ...extra }
}

/** Runs a command with a time limit; its output (trimmed) or an InstallFailure with its last words. */
async function run(command: string[], options: { cwd: string; env: Record<string, string>; what: string }): Promise<string> {
  let proc: ReturnType<typeof Bun.spawn<'ignore', 'pipe', 'pipe'>>
  try {
    proc = Bun.spawn(command, { cwd: options.cwd, env: options.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  } catch {
    return fail(`${options.what}: ${command[0]} is not installed on the server`)
  }
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    proc.kill('SIGKILL')
  }, COMMAND_TIMEOUT_MS)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  if (timedOut) fail(`${options.what} took longer than ${COMMAND_TIMEOUT_MS / 1000} s and was stopped`)
  if (code !== 0) {
    const reason = stderr
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !/^(npm (warn|notice)|warning:|hint:)/i.test(line))
      .slice(-3)
      .join(' ')
    fail(`${options.what} failed${reason ? `: ${reason}` : ` (exit code ${code})`}`)
  }
  return stdout.trim()
}

async function fromGit(request: InstallRequest, staging: string): Promise<string> {
  const source = request.package.trim()
  if (!source || source.startsWith('-')) fail('package: a git URL or a local path to a repository')
  const local = !/^[a-z][a-z0-9+.-]*:\/\//i.test(source) && !/^[^/]+@[^/:]+:/.test(source)
  if (/^[a-z][a-z0-9+.-]*::/i.test(source)) fail('package: git transport helpers ("ext::" and the like) are not allowed')
  if (local && !existsSync(resolve(source))) fail(`package: no repository at ${source}`)
  // file:// so that a shallow clone of a local repository is shallow too.
  const from = local ? pathToFileURL(resolve(source)).href : source
  const dest = join(staging, 'src')
  // Only these transports; "ext::" would run a command. No prompt for credentials: fail instead.
  const env = toolEnv({ GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: 'file:git:http:https:ssh', GIT_CONFIG_NOSYSTEM: '1' })
  const version = request.version.trim()
  const base = ['git', '-c', 'core.hooksPath=/dev/null', '-c', 'advice.detachedHead=false']
  if (version && version !== 'latest' && version !== 'HEAD') {
    if (version.startsWith('-')) fail('version: a tag, branch or commit')
    try {
      await run([...base, 'clone', '--quiet', '--depth', '1', '--branch', version, '--', from, dest], { cwd: staging, env, what: 'git clone' })
    } catch (error) {
      // A commit id is not a branch or tag: clone everything and check it out.
      if (!/^[0-9a-f]{7,40}$/i.test(version)) throw error
      rmSync(dest, { recursive: true, force: true })
      await run([...base, 'clone', '--quiet', '--no-checkout', '--', from, dest], { cwd: staging, env, what: 'git clone' })
      await run([...base, 'checkout', '--quiet', '--detach', version, '--'], { cwd: dest, env, what: `git checkout ${version}` })
    }
  } else {
    await run([...base, 'clone', '--quiet', '--depth', '1', '--', from, dest], { cwd: staging, env, what: 'git clone' })
  }
  rmSync(join(dest, '.git'), { recursive: true, force: true })
  return dest
}

async function download(url: string, sha256: string | undefined): Promise<Uint8Array> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return fail('package: the url source needs an http(s) URL of a .tgz')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') fail('package: the url source needs an http(s) URL of a .tgz')
  let response: Response
  try {
    response = await fetch(parsed, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), redirect: 'follow' })
  } catch (error) {
    const timeout = (error as Error)?.name === 'TimeoutError'
    return fail(timeout ? `download took longer than ${DOWNLOAD_TIMEOUT_MS / 1000} s` : `download failed: ${parsed.host} could not be reached`)
  }
  if (!response.ok) fail(`download failed: ${parsed.host} answered HTTP ${response.status}`)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of response.body ?? []) {
    size += chunk.length
    if (size > MAX_ARCHIVE_BYTES) fail('the archive is larger than 100 MB')
    chunks.push(chunk)
  }
  const bytes = Buffer.concat(chunks)
  if (sha256) {
    const actual = createHash('sha256').update(bytes).digest('hex')
    if (actual !== sha256.toLowerCase()) fail(`sha256 mismatch: expected ${sha256.toLowerCase()}, the archive has ${actual}; nothing was unpacked`)
  }
  return bytes
}

function unpack(bytes: Uint8Array, staging: string): string {
  const dest = join(staging, 'src')
  mkdirSync(dest)
  extractTgz(bytes, dest)
  // npm's archives hold everything under package/; others may hold the files at the root.
  if (!existsSync(join(dest, 'plugin.json')) && existsSync(join(dest, 'package', 'plugin.json'))) return join(dest, 'package')
  const entries = readdirSync(dest)
  if (!existsSync(join(dest, 'plugin.json')) && entries.length === 1 && existsSync(join(dest, entries[0]!, 'plugin.json'))) return join(dest, entries[0]!)
  return dest
}

async function fromNpm(request: InstallRequest, staging: string): Promise<string> {
  const name = request.package.trim()
  if (!NPM_NAME.test(name) || name.length > 214) fail(`package: "${request.package}" is not an npm package name`)
  const version = request.version.trim() || 'latest'
  if (!/^[0-9A-Za-z.^~<>=|* +-]{1,100}$/.test(version)) fail(`version: "${request.version}" is not an npm version or tag`)
  const packed = join(staging, 'packed')
  mkdirSync(packed)
  const env = npmEnv(staging)
  await run(['npm', 'pack', `${name}@${version}`, '--pack-destination', packed, '--ignore-scripts', '--json'], { cwd: packed, env, what: `npm pack ${name}@${version}` })
  const tarball = readdirSync(packed).find((file) => file.endsWith('.tgz'))
  if (!tarball) fail(`npm pack ${name}@${version} produced no archive`)
  return unpack(readFileSync(join(packed, tarball!)), staging)
}

function npmEnv(staging: string): Record<string, string> {
  return toolEnv({
    npm_config_cache: join(staging, 'npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_ignore_scripts: 'true',
  })
}

/** A plugin's runtime dependencies, installed without running any install script. */
async function installDependencies(dir: string, staging: string): Promise<void> {
  const file = join(dir, 'package.json')
  if (!existsSync(file)) return
  let pkg: { dependencies?: Record<string, string> }
  try {
    pkg = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return fail('package.json is not valid JSON')
  }
  if (!pkg.dependencies || typeof pkg.dependencies !== 'object' || Object.keys(pkg.dependencies).length === 0) return
  await run(['npm', 'install', '--ignore-scripts', '--omit=dev', '--no-audit', '--no-fund', '--no-package-lock', '--no-save'], {
    cwd: dir,
    env: npmEnv(staging),
    what: 'npm install of the dependencies',
  })
}

function readManifest(dir: string): Manifest {
  const file = join(dir, 'plugin.json')
  if (!existsSync(file)) fail('no plugin.json at the root of the package (or under package/)')
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return fail('plugin.json is not valid JSON')
  }
  const manifest = parseManifest(raw)
  const main = resolve(dir, manifest.main)
  if (!existsSync(main) || !statSync(main).isFile()) fail(`plugin.json: main "${manifest.main}" is not a file in the package`)
  const real = realpathSync(main)
  if (!real.startsWith(realpathSync(dir) + sep)) fail(`plugin.json: main "${manifest.main}" points outside the plugin's folder`)
  return manifest
}

/** Removes what interrupted installs left (staging folders) in the plugins folder. */
export function cleanStaging(pluginsDir: string): void {
  if (!existsSync(pluginsDir)) return
  for (const entry of readdirSync(pluginsDir)) if (entry.startsWith(STAGING_PREFIX)) rmSync(join(pluginsDir, entry), { recursive: true, force: true })
}

/**
 * Fetches into a staging folder inside the plugins folder, checks the manifest and every symlink,
 * installs dependencies without scripts, then renames the folder into place and records it.
 * Any failure removes the staging folder: nothing is left behind.
 */
export async function installPlugin(request: InstallRequest, hooks: InstallHooks): Promise<{ manifest: Manifest; row: PluginRow }> {
  mkdirSync(hooks.pluginsDir, { recursive: true })
  const staging = mkdtempSync(join(hooks.pluginsDir, STAGING_PREFIX))
  let claimed: string | null = null
  try {
    const dir =
      request.source === 'git' ? await fromGit(request, staging) : request.source === 'npm' ? await fromNpm(request, staging) : unpack(await download(request.package, request.sha256), staging)
    assertContained(dir)
    const manifest = readManifest(dir)
    hooks.claim(manifest.name)
    claimed = manifest.name
    await installDependencies(dir, staging)
    assertContained(dir)
    const target = join(hooks.pluginsDir, manifest.name)
    // A folder without a database row is what a crash between rename and record left: not a plugin.
    rmSync(target, { recursive: true, force: true })
    renameSync(dir, target)
    try {
      return { manifest, row: await hooks.record(manifest.name, manifest.version) }
    } catch (error) {
      rmSync(target, { recursive: true, force: true })
      throw error
    }
  } catch (error) {
    // A full disk is the server's condition, not the package's: the global handler answers 507.
    if (error instanceof AppError || storageFull(error)) throw error
    const reason =
      error instanceof InstallFailure || error instanceof UnsafeArchiveError || error instanceof ManifestError
        ? error.message
        : 'the package could not be unpacked'
    if (!(error instanceof InstallFailure || error instanceof UnsafeArchiveError || error instanceof ManifestError)) {
      hooks.log(`plugin install (${request.source} ${request.package}) failed: ${(error as Error)?.stack ?? String(error)}`)
    }
    throw new AppError('INSTALL_FAILED', `Install failed: ${scrub(reason, staging, hooks.pluginsDir)}`)
  } finally {
    rmSync(staging, { recursive: true, force: true })
    if (claimed) hooks.release(claimed)
  }
}

/** Messages never show this machine's paths. */
function scrub(message: string, staging: string, pluginsDir: string): string {
  return redactCredentials(message.split(staging).join('<staging>').split(pluginsDir).join('<plugins>')).slice(0, 1000)
}

/** `https://user:token@host/…` → `https://***@host/…`: URLs are shown without their credentials. */
export function redactCredentials(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1***@')
}
