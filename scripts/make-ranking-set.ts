// Writes test/fixtures/ranking-labelled.json, the labelled set ranking is fitted and checked on:
// questions as people type them built from the titles of two Debian documentation packages (the
// PostgreSQL manual, the Git reference pages; a title found on one page only, so its page is the
// answer), look-ups of the identifiers of test/fixtures/identifier-corpus.ts (whole and by a part),
// the knowledge-base set's questions, the intranet pages of test/fixtures/rag-corpus.json asked by
// keywords and by paraphrases, and off-topic questions (no answer in any corpus). Each query
// is in the fitting half or the checking half. Deterministic: run it again after a package update.
// Run: bun scripts/make-ranking-set.ts
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensurePackages, loadPages, questions } from '../bench/debian-docs'
import { identifierCorpus } from '../test/fixtures/identifier-corpus'
import kb from '../test/fixtures/kb-labelled.json'
import intranet from '../test/fixtures/rag-corpus.json'

const root = join(import.meta.dir, '..')
const cache = process.env.BENCH_CACHE ?? join(root, '.bench')
const PACKAGES = ['postgresql-doc-15', 'git-doc']
const PER_PACKAGE = 400

if (!ensurePackages(cache, PACKAGES)) process.exit(1)
const version = (name: string) => /^Version: (.+)$/m.exec(Bun.spawnSync(['dpkg-deb', '-f', Bun.spawnSync(['sh', '-c', `ls ${cache}/${name}_*.deb`]).stdout.toString().trim()]).stdout.toString())![1]!

const queries: { corpus: string; query: string; expected: string[]; half: 'fit' | 'check'; kind: string; form?: string }[] = []
for (const name of PACKAGES) {
  questions(loadPages(cache, [name]), PER_PACKAGE).forEach((q, i) =>
    queries.push({ corpus: name, query: q.query, expected: [q.source], half: i % 2 ? 'check' : 'fit', kind: 'question' }),
  )
}
identifierCorpus().forEach((d, i) => {
  // Forms come in turn: halves alternate every round of them, so each half holds every form.
  const half = Math.floor(i / 8) % 2 ? 'check' : 'fit'
  queries.push({ corpus: 'identifiers', query: d.identifier, expected: [d.id], half, kind: 'identifier', form: d.form })
  if (d.part) queries.push({ corpus: 'identifiers', query: d.part, expected: [d.id], half, kind: 'part', form: d.form })
})
// Short intranet pages asked by keywords and by paraphrases that share few words with the page: the
// fixed corpus the RAG tests hold every setting to (each page first for both), so all of it is in the
// fitting half, where the fit keeps it as a constraint.
intranet.queries.forEach((q) => {
  queries.push({ corpus: 'intranet', query: q.keyword, expected: [q.expected], half: 'fit', kind: 'question' })
  queries.push({ corpus: 'intranet', query: q.paraphrase, expected: [q.expected], half: 'fit', kind: 'paraphrase' })
})
kb.onTopic.forEach((q, i) => queries.push({ corpus: 'kb', query: q.question, expected: [q.expected], half: i % 2 ? 'check' : 'fit', kind: 'question' }))

const offTopic = [
  ...kb.offTopic,
  'how do I bake sourdough bread at home',
  'what is the best time of year to plant tomatoes',
  'who won the football world cup in 1998',
  'how far is the moon from the earth',
  'what should I feed a kitten',
  'how do I tie a bowline knot',
  'what is the plot of the movie casablanca',
  'how many calories are in a banana',
  'which wine goes well with grilled salmon',
  'how do I get rid of hiccups',
]

writeFileSync(
  join(root, 'test/fixtures/ranking-labelled.json'),
  `${JSON.stringify(
    {
      about:
        'Labelled queries for fitting and checking RAG ranking (scripts/make-ranking-set.ts wrote it; scripts/fit-ranking.ts fits on the fit half; `bun run bench ranking` reports the check half). Corpora: the Debian packages below (page ids are paths inside them), test/fixtures/identifier-corpus.ts, test/fixtures/kb-labelled.json.',
      packages: PACKAGES.map((name) => ({ name, version: version(name) })),
      offTopic,
      queries,
    },
    null,
    1,
  )}\n`,
)
console.log(`${queries.length} queries (${queries.filter((q) => q.half === 'fit').length} to fit, ${queries.filter((q) => q.half === 'check').length} to check), ${offTopic.length} off-topic`)
