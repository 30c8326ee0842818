// libpocketsphinx (bun:ffi), run by the work pool (transcribe.work.ts): the models load once per
// worker, and decoding never blocks the server's event loop. Two decoders: `commands` (JSGF
// grammars, wide beams) and `dictation` (the general language model), each made on first use.
import { CString, dlopen, FFIType, ptr, type Pointer } from 'bun:ffi'

/** A command grammar: alternatives of words and `<rule>` references, and the rules' own alternatives. */
export interface CommandGrammar {
  name: string
  /** Each alternative is a list of words and `<rule>` references. */
  phrases: string[][]
  rules: Record<string, string[][]>
}

export interface DecodeRequest {
  samples: Int16Array
  mode: 'commands' | 'dictation'
  modelDir: string
  grammar?: CommandGrammar
}

interface Trie {
  end: boolean
  next: Map<string, Trie>
}

/**
 * Alternatives as one JSGF expression with shared prefixes merged ("what time is it | what is …"
 * → "what ( time is it | is … )"): the decoder then follows one path per prefix, not one per phrase.
 */
function prefixTree(alternatives: string[][]): string {
  const root: Trie = { end: false, next: new Map() }
  for (const alternative of alternatives) {
    let node = root
    for (const token of alternative) {
      let child = node.next.get(token)
      if (!child) node.next.set(token, (child = { end: false, next: new Map() }))
      node = child
    }
    node.end = true
  }
  const emit = (node: Trie): string => {
    const branches = [...node.next].map(([token, child]) => (child.next.size === 0 ? token : `${token} ${child.end ? `[ ${emit(child)} ]` : emit(child)}`))
    return branches.length === 1 ? branches[0]! : `( ${branches.join(' | ')} )`
  }
  return emit(root)
}

/** JSGF text of a grammar, leaving out alternatives with a word the dictionary lacks. */
function toJsgf(grammar: CommandGrammar, known: (word: string) => boolean): string {
  const usable = (alternative: string[]) => alternative.length > 0 && alternative.every((token) => token.startsWith('<') || known(token))
  const rules = Object.entries(grammar.rules)
    .map(([name, alternatives]) => [name, alternatives.filter(usable)] as const)
    .filter(([, alternatives]) => alternatives.length > 0)
  const defined = new Set(rules.map(([name]) => `<${name}>`))
  const resolvable = (alternative: string[]) => usable(alternative) && alternative.every((token) => !token.startsWith('<') || defined.has(token))
  const body = (alternatives: readonly string[][]) => prefixTree(alternatives.filter(resolvable))
  const lines = ['#JSGF V1.0;', 'grammar commands;', `public <command> = ${body(grammar.phrases)};`]
  for (const [name, alternatives] of rules) lines.push(`<${name}> = ${body(alternatives)};`)
  return `${lines.join('\n')}\n`
}

const { ptr: P, i32, cstring, u64, f64, void: VOID } = FFIType

function load() {
  const base = dlopen('libsphinxbase.so.3', {
    cmd_ln_parse_r: { args: [P, P, i32, P, i32], returns: P },
    logmath_exp: { args: [P, i32], returns: f64 },
  }).symbols
  const ps = dlopen('libpocketsphinx.so.3', {
    ps_args: { args: [], returns: P },
    ps_init: { args: [P], returns: P },
    ps_set_jsgf_string: { args: [P, cstring, cstring], returns: i32 },
    ps_set_search: { args: [P, cstring], returns: i32 },
    ps_get_search: { args: [P], returns: P },
    ps_start_utt: { args: [P], returns: i32 },
    ps_process_raw: { args: [P, P, u64, i32, i32], returns: i32 },
    ps_end_utt: { args: [P], returns: i32 },
    ps_get_hyp: { args: [P, P], returns: P },
    ps_get_prob: { args: [P], returns: i32 },
    ps_get_logmath: { args: [P], returns: P },
    ps_seg_iter: { args: [P], returns: P },
    ps_seg_next: { args: [P], returns: P },
    ps_seg_word: { args: [P], returns: P },
    ps_seg_frames: { args: [P, P, P], returns: VOID },
    ps_seg_prob: { args: [P, P, P, P], returns: i32 },
    ps_seg_free: { args: [P], returns: VOID },
    ps_lookup_word: { args: [P, cstring], returns: P },
    ps_add_word: { args: [P, cstring, cstring, i32], returns: i32 },
  }).symbols
  return { base, ps }
}

let lib: ReturnType<typeof load> | null = null
const decoders = new Map<string, Pointer>()
const grammars = new Set<string>()
const cstr = (text: string) => Buffer.from(`${text}\0`)

export function decoder(mode: 'commands' | 'dictation', modelDir: string): Pointer {
  const key = `${mode}:${modelDir}`
  const existing = decoders.get(key)
  if (existing) return existing
  lib ??= load()
  const args = ['-hmm', `${modelDir}/en-us`, '-dict', `${modelDir}/cmudict-en-us.dict`, '-logfn', '/dev/null']
  // Dictation: the general model, with pruning that halves its time (its accuracy on synthetic
  // speech is poor either way). Commands: a grammar, whose search prunes too hard by default
  // (short commands lost their only path), so its beams are wider.
  if (mode === 'dictation') args.push('-lm', `${modelDir}/en-us.lm.bin`, '-maxhmmpf', '3000', '-maxwpf', '5', '-pl_window', '10')
  else args.push('-beam', '1e-60', '-pbeam', '1e-60', '-wbeam', '1e-40', '-maxhmmpf', '3000')
  const buffers = args.map(cstr)
  const argv = new BigUint64Array(buffers.length)
  buffers.forEach((buffer, i) => (argv[i] = BigInt(ptr(buffer))))
  const config = lib.base.cmd_ln_parse_r(null, lib.ps.ps_args(), buffers.length, ptr(argv), 1)
  if (!config) throw new Error('pocketsphinx rejected its configuration')
  const made = lib.ps.ps_init(config) as Pointer | null
  if (!made) throw new Error(`pocketsphinx could not load its model from ${modelDir}`)
  decoders.set(key, made)
  return made
}

/** One utterance (16 kHz, 16-bit) → its words, their times and scores. */
export function decode(request: DecodeRequest) {
  const handle = decoder(request.mode, request.modelDir)
  const ps = lib!.ps
  if (request.mode === 'commands') {
    const grammar = request.grammar!
    const grammarKey = `${request.modelDir}:${grammar.name}`
    if (!grammars.has(grammarKey)) {
      const known = (word: string) => ps.ps_lookup_word(handle, cstr(word)) !== null
      if (ps.ps_set_jsgf_string(handle, cstr(grammar.name), cstr(toJsgf(grammar, known))) < 0) throw new Error('pocketsphinx rejected the command grammar')
      grammars.add(grammarKey)
    }
    ps.ps_set_search(handle, cstr(grammar.name))
  }
  const samples = request.samples
  ps.ps_start_utt(handle)
  if (samples.length) ps.ps_process_raw(handle, ptr(samples), samples.length, 0, 1)
  ps.ps_end_utt(handle)
  const score = new Int32Array(1)
  const hyp = ps.ps_get_hyp(handle, ptr(score))
  const words: { word: string; start: number; end: number; probability: number }[] = []
  const lmath = ps.ps_get_logmath(handle)
  const ascr = new Int32Array(1)
  const lscr = new Int32Array(1)
  const lback = new Int32Array(1)
  let speechFrames = 0
  for (let seg = ps.ps_seg_iter(handle); seg; seg = ps.ps_seg_next(seg)) {
    const word = new CString(ps.ps_seg_word(seg)!).toString()
    const start = new Int32Array(1)
    const end = new Int32Array(1)
    ps.ps_seg_frames(seg, ptr(start), ptr(end))
    const posterior = ps.ps_seg_prob(seg, ptr(ascr), ptr(lscr), ptr(lback))
    if (word.startsWith('<') || word.startsWith('[') || word.startsWith('++')) continue
    speechFrames += end[0]! - start[0]! + 1
    words.push({
      word: word.replace(/\(\d+\)$/, ''),
      start: start[0]! / 100,
      end: (end[0]! + 1) / 100,
      probability: lib!.base.logmath_exp(lmath, posterior),
    })
  }
  const text = hyp ? new CString(hyp).toString() : ''
  const posterior = request.mode === 'dictation' ? lib!.base.logmath_exp(lmath, ps.ps_get_prob(handle)) : NaN
  return { text, words, score: score[0]!, speechFrames, posterior }
}
