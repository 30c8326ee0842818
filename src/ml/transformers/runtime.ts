import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppError } from '../../core/errors'

type TransformersModule = typeof import('@huggingface/transformers')

let loading: Promise<TransformersModule> | null = null

/**
 * transformers.js, imported on first use (it costs ~50 MB and half a second, which a server on
 * built-in engines never pays), configured for local files only: nothing is fetched from a hub.
 */
export function transformers(modelsDir: string): Promise<TransformersModule> {
  loading ??= import('@huggingface/transformers').then((module) => {
    module.env.allowRemoteModels = false
    module.env.allowLocalModels = true
    return module
  })
  return loading.then((module) => {
    // One models directory per process; set it on every call so a caller's directory is the one used.
    module.env.localModelPath = modelsDir.endsWith('/') ? modelsDir : `${modelsDir}/`
    return module
  })
}

export interface LocalModel {
  id: string
  dir: string
  config: Record<string, unknown>
  /** `q8` when onnx/model_quantized.onnx is present, else `fp32`. */
  dtype: 'q8' | 'fp32'
  onnxFile: string
}

/**
 * 503 MODEL_UNAVAILABLE saying how to install the model. The message reaches API clients, so it
 * names folders relative to the models directory, never by their place on this machine.
 */
export function unavailable(id: string, problem: string): AppError {
  return new AppError(
    'MODEL_UNAVAILABLE',
    `Model ${id} ${problem}. Put its files (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx) in ` +
      `the folder ${id} of the models directory (UAGENT_MODELS_DIR): run "uagent models pull ${id}" on a machine with ` +
      'internet and copy the folder, or see models/README.md.',
  )
}

/** A loader's error text without this machine's paths: relative to the models directory, other paths cut to their file name. */
export function withoutPaths(text: string, modelsDir: string): string {
  const root = modelsDir.endsWith('/') ? modelsDir : `${modelsDir}/`
  return text.replaceAll(root, '').replace(/(^|[\s'"(:])(?:\/[^\s/:'"()]+)+\/([^\s/:'"()]+)/g, '$1$2')
}

/** Checks that a model folder has what transformers.js needs; throws 503 MODEL_UNAVAILABLE with guidance otherwise. */
export function locateModel(modelsDir: string, id: string): LocalModel {
  const dir = join(modelsDir, id)
  if (!existsSync(dir)) throw unavailable(id, 'is not installed')
  for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    if (!existsSync(join(dir, file))) throw unavailable(id, `is incomplete (${file} is missing)`)
  }
  const quantized = join(dir, 'onnx/model_quantized.onnx')
  const full = join(dir, 'onnx/model.onnx')
  if (!existsSync(quantized) && !existsSync(full)) throw unavailable(id, 'is incomplete (onnx/model.onnx is missing)')
  let config: Record<string, unknown>
  try {
    config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'))
  } catch {
    throw unavailable(id, 'has an unreadable config.json')
  }
  const dtype = existsSync(quantized) ? 'q8' : 'fp32'
  return { id, dir, config, dtype, onnxFile: dtype === 'q8' ? quantized : full }
}

/** A failure while a loaded model runs (wrong files for its kind, a broken graph): 503, as a failed load is. */
export function failedWhileRunning(id: string, modelsDir: string, error: unknown): AppError {
  if (error instanceof AppError) return error
  const detail = withoutPaths((error as Error)?.message?.split('\n')[0] ?? String(error), modelsDir).slice(0, 200)
  return unavailable(id, `failed while running (${detail})`)
}

/** Runs a model load, turning any failure into 503 MODEL_UNAVAILABLE that says how to fix it. */
export async function loadOrExplain<T>(id: string, modelsDir: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (error instanceof AppError) throw error
    const detail = withoutPaths((error as Error).message.split('\n')[0] ?? '', modelsDir).slice(0, 200)
    throw unavailable(id, `could not be loaded (${detail})`)
  }
}
