// `bun src/ml/intent/train-intents.ts OUT.bin`: trains the intent classifier on the repository's
// phrases and writes the model file (to OUT.bin.partial, then renamed: a reader never sees half a
// file). The server runs it as a child process when its cached model is missing (classifier.ts).
import { renameSync, writeFileSync } from 'node:fs'
import { TRAINING_FILE, trainIntentModel } from './classifier'

const out = process.argv[2]
if (!out) {
  console.error('usage: bun src/ml/intent/train-intents.ts OUT.bin')
  process.exit(2)
}
const model = await trainIntentModel(await Bun.file(TRAINING_FILE).text())
const partial = `${out}.${process.pid}.partial`
writeFileSync(partial, model, { mode: 0o600 })
renameSync(partial, out)
