// Model layer overhead: the Embedder and Generator against raw onnxruntime-node / transformers.js on
// the same files (MiniLM-L6 and SmolLM2-135M shapes, random weights), and the built-in embedder.
import { join } from 'node:path'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { meanPool, TransformersEmbedder } from '../src/ml/transformers/embedder'
import { TransformersGenerator } from '../src/ml/transformers/generator'
import { transformers } from '../src/ml/transformers/runtime'
import { BENCH_CHAT_ID, BENCH_EMBED_ID, ensureBenchModels } from './models'

const TEXTS = Array.from({ length: 64 }, (_, i) => `Document ${i}: the quick brown fox jumps over the lazy dog while the printer on the third floor runs out of paper again.`)

async function rate(label: string, units: number, run: () => Promise<unknown>, seconds = 3) {
  await run()
  let count = 0
  const started = performance.now()
  while (performance.now() - started < seconds * 1000) {
    await run()
    count++
  }
  return (count * units) / ((performance.now() - started) / 1000)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/**
 * Layer and raw in alternating rounds (drift on a shared machine hits both alike); the cost is
 * the median of the per-round ratios, the rates are medians too.
 */
async function compare(units: number, layer: () => Promise<unknown>, raw: () => Promise<unknown>, rounds = 5, seconds = 1.5) {
  const layerRates: number[] = []
  const rawRates: number[] = []
  for (let round = 0; round < rounds; round++) {
    layerRates.push(await rate('layer', units, layer, seconds))
    rawRates.push(await rate('raw', units, raw, seconds))
  }
  const ratio = median(layerRates.map((value, i) => value / rawRates[i]!))
  return { layer: median(layerRates), raw: median(rawRates), ratio }
}

function line(label: string, { layer, raw, ratio }: { layer: number; raw: number; ratio: number }, unit: string) {
  const cost = (1 - ratio) * 100
  console.log(`${label.padEnd(44)} ${layer.toFixed(1).padStart(8)} ${unit}  raw ${raw.toFixed(1).padStart(8)} ${unit}  layer cost ${cost.toFixed(1).padStart(5)}%  goal <= 10%  ${cost <= 10 ? 'ok' : 'MISSED'}`)
}

async function benchEmbedder(modelsDir: string) {
  const module = await transformers(modelsDir)
  const embedder = await TransformersEmbedder.load(modelsDir, BENCH_EMBED_ID)
  const tokenizer = await module.AutoTokenizer.from_pretrained(BENCH_EMBED_ID)
  const ort = await import('onnxruntime-node')
  const session = await ort.InferenceSession.create(join(modelsDir, BENCH_EMBED_ID, 'onnx/model.onnx'))
  // Raw: the same tokenizer and pooling around a bare onnxruntime-node session.run.
  const raw = async (texts: string[]) => {
    const encoded = tokenizer(texts, { padding: true, truncation: true })
    const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {}
    for (const name of ['input_ids', 'attention_mask', 'token_type_ids']) {
      const tensor = (encoded as unknown as Record<string, { data: BigInt64Array; dims: number[] }>)[name]!
      feeds[name] = new ort.Tensor('int64', tensor.data, tensor.dims)
    }
    const output = (await session.run(feeds)).last_hidden_state!
    return meanPool({ data: output.data as Float32Array, dims: output.dims as number[] }, encoded.attention_mask as unknown as { data: BigInt64Array; dims: number[] })
  }
  for (const batch of [1, 32]) {
    const texts = TEXTS.slice(0, batch)
    const figures = await compare(batch, () => embedder.embed(texts), () => raw(texts))
    line(`MiniLM-L6 shape, batch ${batch}, Embedder.embed`, figures, 'emb/s')
  }
}

async function benchGenerator(modelsDir: string) {
  const module = await transformers(modelsDir)
  const generator = await TransformersGenerator.load(modelsDir, BENCH_CHAT_ID)
  const tokenizer = await module.AutoTokenizer.from_pretrained(BENCH_CHAT_ID)
  const model = await module.AutoModelForCausalLM.from_pretrained(BENCH_CHAT_ID, { dtype: 'fp32', device: 'cpu' })
  const messages = [{ role: 'user' as const, content: 'Write a short paragraph about the printer on the third floor.' }]
  const prompt = generator.prompt(messages)
  const tokens = 48
  const inputs = tokenizer(prompt, { add_special_tokens: false })
  // Raw: transformers.js generate with the same prompt and greedy decoding, no streamer.
  const raw = async () => {
    const output = (await model.generate({ ...inputs, max_new_tokens: tokens, min_new_tokens: tokens, do_sample: false } as never)) as { dims: number[] }
    return output.dims[1]! - (inputs.input_ids as { dims: number[] }).dims[1]!
  }
  const layer = async () => {
    let text = ''
    for await (const piece of generator.stream(messages, { maxTokens: tokens })) text += piece
    return text
  }
  const generated = await raw()
  const figures = await compare(generated, layer, raw, 5, 3)
  line(`SmolLM2-135M shape, ${generated} tokens, Generator.stream`, figures, 'tok/s')
}

async function benchBuiltin() {
  const embedder = new HashEmbedder()
  const perSecond = await rate('builtin', TEXTS.length, () => embedder.embed(TEXTS), 2)
  console.log(`${'built-in hash embedder (~130-character texts)'.padEnd(44)} ${perSecond.toFixed(0).padStart(8)} texts/s`)
}

export async function benchMl() {
  const modelsDir = ensureBenchModels()
  console.log('\n== Model runtime (random weights in real shapes; CPU, onnxruntime-node; 5 alternating rounds, medians)')
  await benchEmbedder(modelsDir)
  await benchGenerator(modelsDir)
  await benchBuiltin()
}

if (import.meta.main) await benchMl()
