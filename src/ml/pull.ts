import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, normalize, relative } from 'node:path'
import { createModels, type ModelsConfig, type ModelStatus } from '.'
import { IdleTimer } from './idle-timer'

export const DEFAULT_HUB = 'https://huggingface.co'
const REQUIRED = ['config.json', 'tokenizer.json', 'tokenizer_config.json']
const OPTIONAL = ['generation_config.json', 'special_tokens_map.json']
const WEIGHTS = ['onnx/model_quantized.onnx', 'onnx/model.onnx']
const MODEL_ID = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)?$/

export interface PullProgress {
  file: string
  received: number
  total: number | null
}

export interface PullOptions {
  id: string
  modelsDir: string
  /** Hub base URL (HF_ENDPOINT-style); files are fetched from `{endpoint}/{id}/resolve/main/{file}`. */
  endpoint?: string
  /** Exact files to fetch instead of the default set. */
  files?: string[]
  onProgress?: (progress: PullProgress) => void
  fetchImpl?: typeof fetch
  /** Longest silence from the hub, before its answer or between two pieces of a file (default 60 s). */
  idleMs?: number
}

export class PullError extends Error {}

/** A file name from the caller, as a path inside the model folder; anything that could leave it is refused. */
function safeFile(file: string): string {
  const cleaned = normalize(file)
  if (!file || isAbsolute(file) || file.includes('\\') || cleaned.startsWith('..') || cleaned.split('/').includes('..')) {
    throw new PullError(`"${file}" is not a file of a model folder (expected a relative path such as onnx/model.onnx)`)
  }
  return cleaned
}

async function download(url: string, target: string, file: string, options: PullOptions): Promise<boolean> {
  const idle = new IdleTimer(options.idleMs ?? 60_000)
  try {
    const response = await (options.fetchImpl ?? fetch)(url, { redirect: 'follow', signal: idle.signal })
    if (response.status === 404) return false
    if (!response.ok || !response.body) throw new PullError(`${url} answered ${response.status}`)
    // A sign-in or error page answered with 200 is not a model file.
    if ((response.headers.get('content-type') ?? '').startsWith('text/html')) {
      throw new PullError(`${url} answered with a web page, not the file: check the hub address (--endpoint or HF_ENDPOINT)`)
    }
    const total = Number(response.headers.get('content-length')) || null
    mkdirSync(dirname(target), { recursive: true })
    const sink = Bun.file(target).writer()
    let received = 0
    for await (const chunk of response.body) {
      idle.touch()
      sink.write(chunk)
      received += chunk.byteLength
      options.onProgress?.({ file, received, total })
    }
    await sink.end()
    if (received === 0) throw new PullError(`${url} answered with an empty file`)
    return true
  } catch (error) {
    if (idle.fired) throw new PullError(`${url} went silent for ${idle.ms / 1000} s`)
    throw error
  } finally {
    idle.clear()
  }
}

/**
 * Downloads a model into `<modelsDir>/<id>` from a Hugging Face-style hub: the config and
 * tokenizer files, and the quantized ONNX weights (or the full ones when there are none). Files
 * land in a temporary folder first, so an interrupted pull never leaves a half model behind.
 */
export async function pullModel(options: PullOptions): Promise<{ id: string; dir: string; files: string[] }> {
  const { id, modelsDir } = options
  if (!MODEL_ID.test(id) || id.includes('..')) throw new PullError(`"${id}" is not a model id (expected organisation/name)`)
  const endpoint = (options.endpoint || process.env.HF_ENDPOINT || DEFAULT_HUB).replace(/\/+$/, '')
  const files = options.files?.map(safeFile)
  const dir = join(modelsDir, id)
  const partial = `.partial-${id.replaceAll('/', '--')}`
  const staging = join(modelsDir, partial)
  // What an interrupted pull of this model left behind (older versions added a process id) goes first.
  if (existsSync(modelsDir)) {
    for (const entry of readdirSync(modelsDir)) {
      if (entry === partial || entry.startsWith(`${partial}-`)) rmSync(join(modelsDir, entry), { recursive: true, force: true })
    }
  }
  const fetched: string[] = []
  const url = (file: string) => `${endpoint}/${id}/resolve/main/${file}`
  try {
    if (files) {
      for (const file of files) {
        if (!(await download(url(file), join(staging, file), file, options))) throw new PullError(`${file} was not found at ${url(file)}`)
        fetched.push(file)
      }
    } else {
      for (const file of REQUIRED) {
        if (!(await download(url(file), join(staging, file), file, options))) throw new PullError(`${id} has no ${file} at ${endpoint}`)
        fetched.push(file)
      }
      for (const file of OPTIONAL) if (await download(url(file), join(staging, file), file, options)) fetched.push(file)
      let weights = false
      for (const file of WEIGHTS) {
        if (await download(url(file), join(staging, file), file, options)) {
          fetched.push(file)
          weights = true
          break
        }
      }
      if (!weights) throw new PullError(`${id} has no ONNX weights (onnx/model_quantized.onnx or onnx/model.onnx) at ${endpoint}`)
    }
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dirname(dir), { recursive: true })
    renameSync(staging, dir)
    return { id, dir, files: fetched }
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    if (error instanceof PullError) throw error
    throw new PullError(`could not download ${id} from ${endpoint}: ${(error as Error).message}`)
  }
}

export interface InstalledModel {
  id: string
  kind: 'embedding' | 'chat' | 'unknown'
  sizeBytes: number
  quantized: boolean
  active: 'embedder' | 'generator' | null
}

function folderSize(dir: string): number {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) total += folderSize(path)
    else {
      try {
        total += statSync(path).size
      } catch {
        // A link to nothing: counts for nothing, and never stops the listing.
      }
    }
  }
  return total
}

function kindOf(dir: string): InstalledModel['kind'] {
  try {
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { architectures?: string[]; model_type?: string }
    const architecture = config.architectures?.join(' ') ?? ''
    if (/CausalLM|ForConditionalGeneration/.test(architecture)) return 'chat'
    if (/bert|mpnet|e5|bge|nomic/i.test(`${architecture} ${config.model_type}`)) return 'embedding'
  } catch {}
  return 'unknown'
}

/** The models installed under the models directory (folders with a config.json), and which engines are active. */
export function listModels(config: ModelsConfig): { modelsDir: string; models: InstalledModel[]; active: ModelStatus } {
  const active = createModels(config).status()
  const models: InstalledModel[] = []
  const visit = (dir: string, depth: number) => {
    if (!existsSync(dir)) return
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue
      const path = join(dir, entry.name)
      if (existsSync(join(path, 'config.json'))) {
        const id = relative(config.modelsDir, path)
        models.push({
          id,
          kind: kindOf(path),
          sizeBytes: folderSize(path),
          quantized: existsSync(join(path, 'onnx/model_quantized.onnx')),
          active: id === active.embedderId ? 'embedder' : id === active.generatorId ? 'generator' : null,
        })
      } else if (depth < 2) visit(path, depth + 1)
    }
  }
  visit(config.modelsDir, 1)
  return { modelsDir: config.modelsDir, models: models.sort((a, b) => a.id.localeCompare(b.id)), active }
}
