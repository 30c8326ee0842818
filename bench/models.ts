// Shape-realistic random-weight models for the benchmarks, written once into .bench/models.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH_CHAT_ID, BENCH_EMBED_ID, writeBenchModels } from '../scripts/make-fixture-models'

export const BENCH_MODELS_DIR = join(import.meta.dir, '../.bench/models')
export { BENCH_CHAT_ID, BENCH_EMBED_ID }

export function ensureBenchModels(): string {
  if (!existsSync(join(BENCH_MODELS_DIR, BENCH_CHAT_ID, 'onnx/model.onnx')) || !existsSync(join(BENCH_MODELS_DIR, BENCH_EMBED_ID, 'onnx/model.onnx'))) {
    const started = performance.now()
    writeBenchModels(BENCH_MODELS_DIR)
    console.log(`(wrote the bench models into ${BENCH_MODELS_DIR} in ${((performance.now() - started) / 1000).toFixed(1)} s)`)
  }
  return BENCH_MODELS_DIR
}
