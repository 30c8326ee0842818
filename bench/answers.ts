// Answers without a model: what the built-in engines give a newcomer, before issue 37 (the frozen
// engine in bench/answers/baseline-extractive.ts) beside now, in one run. Figures, never asserted.
//   sentence-hit@1  test/fixtures/answers-labelled.json: real Debian documents in one collection,
//                   each question asked through answerQuestion (retrieval + the built-in engine);
//                   a hit when the answer's first sentence (with the one it leans on) is the labelled one.
//   paraphrase recall@3  test/fixtures/paraphrase-labelled.json: questions sharing only synonyms with their paragraph;
//                   test/fixtures/paraphrase-natural.json: everyday wording; test/fixtures/paraphrase-wordnet.json:
//                   WordNet synonyms of the passage's words, drawn at random, over 44 paragraphs. Without synonyms, with last session's
//                   first-sense expansion (bench/answers/baseline-expansion.ts) and now.
//   held-out docs    bench/answers/heldout.ts: manual pages never tuned on, asked by their own descriptions;
//                   bench/answers/heldout-info.ts: the GNU Info manuals, one document per node, asked by their headings.
//   agent synthesis  bench/answers/agents.ts: the labelled questions as tasks, the tree before issue 37 beside this one;
//                   and tasks a built-in plugin answers (the researcher calling plugin tools without a model).
//   refusals         bench/answers/refusal.ts: a handbook beside hundreds of unrelated documents, two families;
//                   and a tool's handbook beside 0, 100 and 300 licence files (issue 56.3).
import set from '../test/fixtures/answers-labelled.json'
import { openDatabase } from '../src/db'
import { ExtractiveGenerator } from '../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { answerPrompt, answerQuestion, fitPassages, relevantPassages } from '../src/modules/rag/answer/answer'
import { RagService } from '../src/modules/rag/service'
import { BaselineExtractiveGenerator } from './answers/baseline-extractive'
import { type Family, gitFamily, licenceFamily, toolFamily } from './answers/refusal'
import { pluginTasks, sourceBefore, type SynthesisFigures, synthesisFigures } from './answers/agents'
import { join } from 'node:path'
import { allParagraphs, answersWith, firstAnswerSentence, paragraphDocuments } from '../test/answers-metric'
import paraphrases from '../test/fixtures/paraphrase-labelled.json'
import natural from '../test/fixtures/paraphrase-natural.json'
import lexical from '../test/fixtures/paraphrase-wordnet.json'
import { firstSenseSearch } from './answers/baseline-expansion'
import world from '../test/fixtures/world-questions.json'
import { type HeldOut, heldOut } from './answers/heldout'
import { heldOutInfo } from './answers/heldout-info'

const USER = 'bench'
/** The commit this session's search work (synonyms weighed, repeated passages, headings) started from. */
const SESSION_BASE = '0f098ce'
const squash = (text: string) => text.replace(/\s+/g, ' ').trim()

/** An in-memory knowledge base with the built-in engines; `synonyms: false` searches as before issue 37 (no query expansion). */
export function knowledgeBase(options: { synonyms?: boolean } = {}) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, 'x', '[\"user\"]', '')", [USER, `${USER}@example.com`])
  const embedder = new HashEmbedder()
  const generator = new ExtractiveGenerator()
  const rag = new RagService({ db, embedder: async () => embedder, generator: async () => generator, synonyms: options.synonyms })
  return { rag, user: USER, embedder }
}

/** An answer as /rag/answer gave it before issue 37: the same search without synonyms, the passage filter, no coverage rule, the engine of before. */
async function answerBefore(kb: ReturnType<typeof knowledgeBase>, collection: string, question: string) {
  const baseline = new BaselineExtractiveGenerator()
  const found = await kb.rag.search(kb.user, collection, question, 5, kb.rag.relevanceFloor(kb.user, collection))
  const relevant = relevantPassages(question, found.results)
  if (!relevant.length) return { answer: '', refused: true, sources: [] as string[] }
  const passages = await fitPassages(baseline, question, relevant)
  const result = await baseline.generate(answerPrompt(question, passages))
  return { answer: result.text, refused: result.noAnswer === true, sources: result.noAnswer ? [] : passages.map((p) => p.id) }
}

async function answerNow(kb: ReturnType<typeof knowledgeBase>, collection: string, question: string) {
  const { answer, sources } = await answerQuestion(kb.rag, kb.user, { question, collection, maxContext: 5, includeContext: false })
  return { answer, refused: sources.length === 0, sources: sources.map((s) => s.id) }
}

type Ask = typeof answerNow

async function sentenceHits(kb: ReturnType<typeof knowledgeBase>, ask: Ask) {
  let hits = 0
  let sourced = 0
  const misses: string[] = []
  for (const q of set.questions) {
    const { answer, sources } = await ask(kb, 'debian', q.question)
    if (sources.includes(q.document)) sourced++
    if (answersWith(answer, q.answer)) hits++
    else misses.push(`${q.question} → ${firstAnswerSentence(answer).slice(0, 110)}`)
  }
  return { hits: hits / set.questions.length, sourced: sourced / set.questions.length, misses }
}

/** Shares of handbook questions answered and world questions refused (no sources), before issue 37 and now. */
async function refusals(family: Family) {
  const now = knowledgeBase()
  await now.rag.ingest(now.user, 'kb', [...family.handbook, ...family.noise])
  const old = knowledgeBase({ synonyms: false })
  await old.rag.ingest(old.user, 'kb', [...family.handbook, ...family.noise])
  const rate = async (questions: string[], kb: ReturnType<typeof knowledgeBase>, ask: Ask, refused: boolean) => {
    let n = 0
    for (const q of questions) if ((await ask(kb, 'kb', q)).refused === refused) n++
    return n / questions.length
  }
  const handbook = family.answerable.map((q) => q.question)
  return {
    answeredBefore: await rate(handbook, old, answerBefore, false),
    answeredAfter: await rate(handbook, now, answerNow, false),
    refusedBefore: await rate(family.world, old, answerBefore, true),
    refusedAfter: await rate(family.world, now, answerNow, true),
    unseenBefore: await rate(world.unseen, old, answerBefore, true),
    unseenAfter: await rate(world.unseen, now, answerNow, true),
  }
}

/** Recall@3 and @10 of a paraphrase set: its paragraph among the first three (ten) results. */
async function paraphraseRecall(search: (question: string) => Promise<string[]>, questions: { question: string; document: string }[]) {
  let at3 = 0
  let at10 = 0
  for (const q of questions) {
    const at = (await search(q.question)).indexOf(q.document)
    if (at >= 0 && at < 3) at3++
    if (at >= 0) at10++
  }
  return { at3: at3 / questions.length, at10: at10 / questions.length }
}

/** How a paraphrase set was searched before this session's expansion (bench/answers/baseline-expansion.ts) and now. */
async function paraphraseFigures(documents: { id: string; content: string }[], questions: { question: string; document: string }[]) {
  const none = knowledgeBase({ synonyms: false })
  await none.rag.ingest(none.user, 'p', documents)
  const now = knowledgeBase()
  await now.rag.ingest(now.user, 'p', documents)
  const ids = (results: { id: string }[]) => results.map((r) => r.id)
  return {
    none: await paraphraseRecall(async (q) => ids((await none.rag.search(none.user, 'p', q, 10)).results), questions),
    first: await paraphraseRecall(async (q) => ids(await firstSenseSearch(now.rag, now.embedder, now.user, 'p', q, 10)), questions),
    now: await paraphraseRecall(async (q) => ids((await now.rag.search(now.user, 'p', q, 10)).results), questions),
  }
}

export async function benchAnswers() {
  console.log('\n== Answers without a model (built-in engines), before issue 37 → now')
  const old = knowledgeBase({ synonyms: false })
  await old.rag.ingest(old.user, 'debian', set.documents)
  const kb = knowledgeBase()
  await kb.rag.ingest(kb.user, 'debian', set.documents)
  const before = await sentenceHits(old, answerBefore)
  const after = await sentenceHits(kb, answerNow)
  console.log(
    `sentence-hit@1        ${before.hits.toFixed(3)} → ${after.hits.toFixed(3)}   (${set.questions.length} questions over ${set.documents.length} real documents; ` +
      `answering document among the sources ${after.sourced.toFixed(3)})`,
  )
  if (process.env.BENCH_VERBOSE) for (const miss of after.misses) console.log(`  miss: ${miss}`)

  for (const [name, documents, questions] of [
    ['paraphrase (synonyms)', paragraphDocuments(set.documents), paraphrases.questions],
    ['paraphrase (everyday)', allParagraphs(set.documents), natural.questions],
    ['paraphrase (WordNet)', allParagraphs(set.documents).filter((p) => lexical.documents.includes(p.id)), lexical.questions],
  ] as const) {
    const f = await paraphraseFigures(documents, questions)
    const fig = (r: { at3: number; at10: number }) => `${r.at3.toFixed(3)}/${r.at10.toFixed(3)}`
    console.log(
      `${name} recall@3/@10  no synonyms ${fig(f.none)}, first-sense synonyms (last session) ${fig(f.first)} → now ${fig(f.now)}   ` +
        `(${questions.length} questions sharing no content word with their paragraph, ${documents.length} paragraphs)`,
    )
  }

  type Kb = ReturnType<typeof knowledgeBase>
  const heldFamilies: [string, string, HeldOut | null][] = [
    ['held-out documentation', "questions from the manual pages' own descriptions", heldOut()],
    ['held-out Info manuals  ', "questions from the Info nodes' own headings (bench/answers/heldout-info.ts)", heldOutInfo()],
  ]
  for (const [name, what, held] of heldFamilies) {
    if (!held) {
      console.log(`${name.trim()}: skipped, its documents are not on this machine`)
      continue
    }
    const row = async (kb: Kb) => {
      for (let i = 0; i < held.documents.length; i += 200) await kb.rag.ingest(kb.user, 'docs', held.documents.slice(i, i + 200))
      let found = 0
      const started = process.cpuUsage()
      for (const q of held.questions) if ((await kb.rag.search(kb.user, 'docs', q.question, 10)).results.some((r) => r.id === q.document)) found++
      const cpu = process.cpuUsage(started)
      return { top10: found / held.questions.length, cpu: (cpu.user + cpu.system) / 1000 / held.questions.length }
    }
    // Before: search as it was when this session began (SESSION_BASE), from that commit's own source.
    const tree = sourceBefore(SESSION_BASE)
    let before: { top10: number; cpu: number } | null = null
    if (tree) {
      const db = (await import(join(tree.dir, 'src/db/index.ts'))).openDatabase(':memory:')
      db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, 'x', '[\"user\"]', '')", [USER, `${USER}@example.com`])
      const { RagService: OldRag } = await import(join(tree.dir, 'src/modules/rag/service.ts'))
      const embedder = new HashEmbedder()
      const generator = new ExtractiveGenerator()
      before = await row({ rag: new OldRag({ db, embedder: async () => embedder, generator: async () => generator }), user: USER, embedder } as Kb)
      tree.cleanup()
    }
    const now = await row(knowledgeBase())
    console.log(
      `${name}  source in top 10 ${before ? before.top10.toFixed(3) : '(n/a)'} → ${now.top10.toFixed(3)}   CPU per search ${before ? before.cpu.toFixed(1) : '(n/a)'} → ${now.cpu.toFixed(1)} ms   ` +
        `(${held.questions.length} ${what}, ${held.documents.length} documents, not in the fitting set (REPEAT_SHARE and PAIR_WEIGHT were chosen with both families in view); before: search at the start of this session, ${SESSION_BASE})`,
    )
  }

  const oldTree = sourceBefore()
  for (const agents of [['planner', 'writer'], ['researcher', 'writer']]) {
    const now = await synthesisFigures(await import('../src/app'), agents)
    const then = oldTree ? await synthesisFigures(await import(join(oldTree.dir, 'src/app.ts')), agents) : null
    const pair = (key: keyof SynthesisFigures) => `${then ? then[key].toFixed(3) : '(n/a)'} → ${now[key].toFixed(3)}`
    console.log(
      `agents ${agents.join(' + ').padEnd(21)} synthesis coverage ${pair('coverage')}, non-empty ${pair('nonEmpty')}, mean confidence ${pair('meanConfidence')}   (${now.tasks} tasks: the labelled questions)`,
    )
  }
  {
    const tasks = pluginTasks()
    const agents = ['researcher', 'writer']
    const now = await synthesisFigures(await import('../src/app'), agents, tasks)
    const then = oldTree ? await synthesisFigures(await import(join(oldTree.dir, 'src/app.ts')), agents, tasks) : null
    const pair = (key: keyof SynthesisFigures) => `${then ? then[key].toFixed(3) : '(n/a)'} → ${now[key].toFixed(3)}`
    console.log(
      `agents ${'researcher + writer'.padEnd(21)} synthesis coverage ${pair('coverage')}, mean confidence ${pair('meanConfidence')}   ` +
        `(${now.tasks} tasks a built-in plugin answers: arithmetic, days between dates, the time in a city; answers worked out independently)`,
    )
  }
  oldTree?.cleanup()

  const families: [string, Family | null][] = [
    ['calibrated on', gitFamily(process.env.BENCH_CACHE ?? join(import.meta.dir, '../.bench'))],
    ['not calibrated on', licenceFamily()],
    // Issue 56.3: whether a question is answered must not depend on how much unrelated text sits beside it.
    ...[0, 100, 300].map((noise): [string, Family] => [`tool, ${noise} licences`, toolFamily(noise)]),
  ]
  for (const [role, family] of families) {
    if (!family) {
      console.log(`refusals (${role}): skipped, the family's documents are not available`)
      continue
    }
    const r = await refusals(family)
    console.log(
      `refusals, ${role.padEnd(17)} world questions refused ${r.refusedBefore.toFixed(3)} → ${r.refusedAfter.toFixed(3)}, handbook questions answered ${r.answeredBefore.toFixed(3)} → ${r.answeredAfter.toFixed(3)}   ` +
        `(${family.name}; ${family.world.length} world, ${family.answerable.length} handbook questions)`,
    )
    console.log(`                            world questions written after the rules were chosen, refused ${r.unseenBefore.toFixed(3)} → ${r.unseenAfter.toFixed(3)}   (${world.unseen.length} questions)`)
  }
}

if (import.meta.main) await benchAnswers()
