// Work module of SYNTHESIZE (synthesizer.ts), run in the work pool's workers: espeak-ng and the
// encoders compile their WebAssembly once per worker; each task speaks its text into its file.
import { type SynthesisRequest, type SynthesisResult, synthesizeToFile } from './synthesizer'

export function run(task: SynthesisRequest & { path: string }): Promise<SynthesisResult> {
  const { path, ...request } = task
  return synthesizeToFile(path, request)
}
