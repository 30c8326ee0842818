#!/usr/bin/env bun
// Writes random-weight ONNX models in the Hugging Face folder layout, loadable by transformers.js:
//   bun scripts/make-fixture-models.ts            → test/fixtures/models (tiny, committed)
//   bun scripts/make-fixture-models.ts --bench D  → D (all-MiniLM-L6-v2 and SmolLM2-135M shapes, never committed)
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { decoderGraph, type DecoderShape, encoderGraph, type EncoderShape } from './fixtures/graphs'
import { byteLevelBpeTokenizer, wordPieceTokenizer } from './fixtures/tokenizers'

export const FIXTURE_EMBED_ID = 'fixtures/tiny-bert'
export const FIXTURE_CHAT_ID = 'fixtures/tiny-llama'
export const BENCH_EMBED_ID = 'bench/all-MiniLM-L6-v2-shape'
export const BENCH_CHAT_ID = 'bench/SmolLM2-135M-shape'

function writeJson(path: string, value: unknown) {
  writeFileSync(path, `${JSON.stringify(value, null, 1)}\n`)
}

export function writeEncoder(dir: string, shape: Omit<EncoderShape, 'vocab'>, vocabSize?: number) {
  const { tokenizer, config, vocabSize: vocab } = wordPieceTokenizer(vocabSize)
  mkdirSync(join(dir, 'onnx'), { recursive: true })
  writeJson(join(dir, 'config.json'), {
    model_type: 'bert',
    architectures: ['BertModel'],
    hidden_size: shape.hidden,
    num_attention_heads: shape.heads,
    num_hidden_layers: shape.layers,
    intermediate_size: shape.intermediate,
    max_position_embeddings: shape.maxPositions,
    type_vocab_size: 2,
    vocab_size: vocab,
    pad_token_id: 0,
  })
  writeJson(join(dir, 'tokenizer.json'), tokenizer)
  writeJson(join(dir, 'tokenizer_config.json'), config)
  writeFileSync(join(dir, 'onnx/model.onnx'), encoderGraph({ ...shape, vocab }))
}

export function writeDecoder(dir: string, shape: Omit<DecoderShape, 'vocab'>, merges: number, vocabSize?: number) {
  const { tokenizer, config, ids, vocabSize: vocab } = byteLevelBpeTokenizer(merges, vocabSize)
  mkdirSync(join(dir, 'onnx'), { recursive: true })
  writeJson(join(dir, 'config.json'), {
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
    hidden_size: shape.hidden,
    num_attention_heads: shape.heads,
    num_key_value_heads: shape.kvHeads,
    head_dim: shape.hidden / shape.heads,
    num_hidden_layers: shape.layers,
    intermediate_size: shape.intermediate,
    max_position_embeddings: shape.maxPositions,
    vocab_size: vocab,
    bos_token_id: ids.bos,
    eos_token_id: ids.eos,
    pad_token_id: ids.pad,
    tie_word_embeddings: false,
    use_cache: true,
  })
  writeJson(join(dir, 'generation_config.json'), { bos_token_id: ids.bos, eos_token_id: ids.eos, pad_token_id: ids.pad })
  writeJson(join(dir, 'tokenizer.json'), tokenizer)
  writeJson(join(dir, 'tokenizer_config.json'), config)
  writeFileSync(join(dir, 'onnx/model.onnx'), decoderGraph({ ...shape, vocab }))
}

/** The committed test fixtures: a few hundred tokens, two layers, tiny widths. */
export function writeTestFixtures(root: string) {
  writeEncoder(join(root, FIXTURE_EMBED_ID), { hidden: 32, heads: 4, layers: 2, intermediate: 64, maxPositions: 128 })
  writeDecoder(join(root, FIXTURE_CHAT_ID), { hidden: 32, heads: 4, kvHeads: 2, layers: 2, intermediate: 64, maxPositions: 256 }, 150)
}

/** Shape-realistic models for the benchmarks (~90 MB and ~540 MB of random weights). */
export function writeBenchModels(root: string) {
  writeEncoder(join(root, BENCH_EMBED_ID), { hidden: 384, heads: 12, layers: 6, intermediate: 1536, maxPositions: 512 }, 30522)
  writeDecoder(join(root, BENCH_CHAT_ID), { hidden: 576, heads: 9, kvHeads: 3, layers: 30, intermediate: 1536, maxPositions: 2048 }, 400, 49152)
}

if (import.meta.main) {
  const benchIndex = process.argv.indexOf('--bench')
  if (benchIndex >= 0) {
    const dir = process.argv[benchIndex + 1] ?? '.bench/models'
    writeBenchModels(dir)
    console.log(`bench models written to ${dir}`)
  } else {
    const dir = join(import.meta.dir, '../test/fixtures/models')
    writeTestFixtures(dir)
    console.log(`fixture models written to ${dir}`)
  }
}
