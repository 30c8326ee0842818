import { describe, expect, test } from 'bun:test'
import { chunkDocument, chunkOptionsFor, PAGE_BREAK } from '../../src/modules/rag/chunking'
import { isFitted, rankingParams } from '../../src/modules/rag/ranking/params'
import stored from '../../src/modules/rag/ranking/params.json'
import { type Candidate, rankCandidates, rareTerms } from '../../src/modules/rag/ranking/scoring'
import { COMMON, FORMS, identifierCorpus, random } from '../fixtures/identifier-corpus'
import labelled from '../fixtures/ranking-labelled.json'
import { makeServer } from '../helpers'
import { inMemoryRag } from '../rag-service'

const service = () => inMemoryRag()

const FEW = 'data to by at the of and in was it for on as with be'.split(' ')

describe('identifier look-ups over 1,000 documents of ordinary text', () => {
  test('each identifier, whole and by its distinctive part, finds its document first (>= 99.5%) and always in the top 10, for every form', async () => {
    const { rag } = service()
    const documents = identifierCorpus(1000)
    for (let i = 0; i < documents.length; i += 250) await rag.ingest('u', 'notes', documents.slice(i, i + 250).map((d) => ({ id: d.id, content: d.content })))
    const byForm = new Map<string, { asked: number; first: number; top10: number }>()
    const misses: string[] = []
    for (const document of documents) {
      for (const [query, kind] of [[document.identifier, 'whole'], [document.part, 'part']] as const) {
        if (!query) continue
        const { results } = await rag.search('u', 'notes', query, 10)
        const ids = results.map((r) => r.id)
        const key = `${document.form} (${kind})`
        const tally = byForm.get(key) ?? { asked: 0, first: 0, top10: 0 }
        tally.asked++
        if (ids[0] === document.id) tally.first++
        else misses.push(`${query} -> ${ids[0]}`)
        if (ids.includes(document.id)) tally.top10++
        byForm.set(key, tally)
      }
    }
    expect([...byForm.keys()].filter((k) => k.endsWith('(whole)')).sort()).toEqual(FORMS.map((f) => `${f} (whole)`).sort())
    for (const [form, tally] of byForm) {
      expect({ form, top10: tally.top10 }).toEqual({ form, top10: tally.asked })
      expect({ form, top1: tally.first / tally.asked >= 0.995 }).toEqual({ form, top1: true })
    }
    const asked = [...byForm.values()].reduce((sum, t) => sum + t.asked, 0)
    expect(misses.length / asked).toBeLessThanOrEqual(0.005)
  }, 120_000)

  test('a chunk of a few common words never outranks the chunk holding the query\'s rare term', async () => {
    // The case measured before: four-word documents ("data to by at") whose handful of hashed features
    // resemble a short query by chance, beside notes each holding one identifier once in longer text.
    // With the scoring of before (0.6 × similarity + 0.4 × saturated BM25, no damping) 10 of these 200
    // identifiers had a four-word document first.
    const { rag } = service()
    const next = random(99)
    const tiny = Array.from({ length: 3000 }, (_, i) => ({ id: `tiny-${i}`, content: Array.from({ length: 4 }, () => COMMON[Math.floor(next() * COMMON.length)]).join(' ') }))
    const notes = identifierCorpus(200, 600, 5)
    const all = [...tiny, ...notes.map((d) => ({ id: d.id, content: d.content }))]
    for (let i = 0; i < all.length; i += 1000) await rag.ingest('u', 'mixed', all.slice(i, i + 1000))
    for (const note of notes) {
      const { results } = await rag.search('u', 'mixed', note.identifier, 10)
      expect({ query: note.identifier, top: results[0]?.id }).toEqual({ query: note.identifier, top: note.id })
      const own = results[0]!.score
      // Every short chunk that made the list scores below the chunk holding the identifier.
      for (const other of results.slice(1)) if (other.id.startsWith('tiny-')) expect(other.score).toBeLessThan(own)
    }
  }, 60_000)

  test('the scoring keeps that order by construction: a rare term held lifts a chunk over mere vector resemblance', () => {
    const params = rankingParams('builtin/hash-embed-384')
    const terms = { terms: [{ word: 'zq 4471', df: 1, phrase: true }, { word: 'zq', df: 1, phrase: false }, { word: '4471', df: 1, phrase: false }], chunks: 20_000 }
    const holder: Candidate = { chunkId: 1, similarity: 0.05, bm25: -25, held: [0, 1, 2], features: 200, vectorRank: 30, keywordRank: 0 }
    const lookalike: Candidate = { chunkId: 2, similarity: 0.95, held: [], features: 1, vectorRank: 0, keywordRank: Infinity }
    const lookalikeRich: Candidate = { ...lookalike, chunkId: 3, features: 500, similarity: 0.75 }
    const ranked = rankCandidates([lookalike, lookalikeRich, holder], terms, params)
    expect(ranked[0]!.chunkId).toBe(1)
    expect(rareTerms(terms, params.rareShare).size).toBe(3)
  })
})

describe('phrases and identifier parts', () => {
  test('a quoted phrase ranks the chunk holding it exactly first, above chunks holding its words apart', async () => {
    const { rag } = service()
    const filler = 'The nightly job copies the archive to the second site and reports to the operations channel.'
    await rag.ingest('u', 'kb', [
      { id: 'apart', content: `${filler} The cache was cold. Later the restart of the service made it warm again. ${filler}` },
      { id: 'apart-2', content: `${filler} Warm up the cache after a restart: a cold cache is slow. ${filler}` },
      { id: 'exact', content: `${filler} We always do a cold cache restart before the benchmark. ${filler}` },
      ...Array.from({ length: 30 }, (_, i) => ({ id: `other-${i}`, content: `${filler} Entry ${i}: the cache and the restart are fine.` })),
    ])
    const { results } = await rag.search('u', 'kb', 'what happens on a "cold cache restart"', 5)
    expect(results[0]!.id).toBe('exact')
  })

  test('identifiers are found whole and by their parts: fs.readFileSync by readFileSync, CVE-2024-3094 by 2024-3094', async () => {
    const { rag } = service()
    const filler = 'The service restarted after the update and the logs were rotated as usual by the operations team.'
    await rag.ingest('u', 'kb', [
      { id: 'api', content: `${filler} The loader calls fs.readFileSync on every request, which blocks. ${filler}` },
      { id: 'cve', content: `${filler} The xz backdoor is tracked as CVE-2024-3094 and was found in March. ${filler}` },
      { id: 'mail', content: `${filler} Send the report to ops-team@example.com by Friday. ${filler}` },
      ...Array.from({ length: 40 }, (_, i) => ({ id: `noise-${i}`, content: `${filler} Read the file, sync it, note ${2000 + i} for the team; example ${i}.` })),
    ])
    for (const [query, id] of [
      ['fs.readFileSync', 'api'],
      ['readFileSync', 'api'],
      ['CVE-2024-3094', 'cve'],
      ['2024-3094', 'cve'],
      ['ops-team@example.com', 'mail'],
      ['ops-team', 'mail'],
    ]) {
      const { results } = await rag.search('u', 'kb', query!, 3)
      expect({ query, top: results[0]?.id }).toEqual({ query, top: id })
    }
  })
})

describe('no fragment noise', () => {
  test('after ingest no chunk is shorter than the minimum unless its whole document is', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const run = (n: number) => Array.from({ length: n }, (_, i) => FEW[(i * 5) % FEW.length]).join(' ')
    const documents = [
      // A paragraph longer than a chunk, of words without punctuation: once cut into a chunk and a tail of four words.
      { id: 'run', content: `${run(240)}\n\n${run(185)}\n\n${run(300)}` },
      // A heading at the very end: its section is one short line.
      { id: 'heading', content: `# Guide\n\n${'A sentence of the guide about setting things up. '.repeat(40)}\n\n## Notes\n\nSee above.` },
      // Short paragraphs after a long one.
      { id: 'paragraphs', content: `${'Long text about backups and their schedules. '.repeat(30)}\n\nOK.\n\nDone.` },
      { id: 'short', content: 'Only a few words.' },
    ]
    expect((await server.call('POST', '/rag/ingest', { token, body: { collection: 'c', documents } })).status).toBe(200)
    const minimum = chunkOptionsFor(undefined).minChars!
    const chunks = server.services.db
      .query<{ doc_id: string; content: string }, []>('SELECT d.doc_id, c.content FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id')
      .all()
    expect(new Set(chunks.map((c) => c.doc_id))).toEqual(new Set(documents.map((d) => d.id)))
    for (const chunk of chunks) {
      const whole = documents.find((d) => d.id === chunk.doc_id)!.content
      if (whole.trim().length >= minimum) expect({ doc: chunk.doc_id, short: chunk.content.trim().length < minimum }).toEqual({ doc: chunk.doc_id, short: false })
    }
    expect(chunks.filter((c) => c.doc_id === 'short')).toHaveLength(1)
  })

  test('the chunker keeps every word, in order, and stays within the largest size plus the minimum', () => {
    const options = chunkOptionsFor(undefined)
    const text = Array.from({ length: 50 }, (_, p) => Array.from({ length: 60 + ((p * 37) % 200) }, (_, i) => FEW[(i * p + 3) % FEW.length]).join(' ')).join('\n\n')
    const chunks = chunkDocument(text, options)
    for (const chunk of chunks) {
      // A short piece joined to the chunk before it adds less than the minimum, and the blank line between.
      expect(chunk.length).toBeLessThanOrEqual(options.maxChars + options.minChars! + 2)
      expect(chunk.trim().length).toBeGreaterThanOrEqual(options.minChars!)
    }
    // Every word of the text is in some chunk, in order (chunks overlap, so compare the non-repeated text).
    let at = 0
    for (const chunk of chunks) {
      const start = text.indexOf(chunk, Math.max(0, at - options.maxChars * 2))
      expect(start).toBeGreaterThanOrEqual(0)
      // Nothing but white space between the end of what came before and this chunk.
      expect(text.slice(at, Math.max(at, start)).trim()).toBe('')
      at = Math.max(at, start + chunk.length)
    }
    expect(at).toBe(text.length)
  })

  test('a PDF page shorter than the minimum stays a chunk of its own, so citations keep their page', () => {
    const options = chunkOptionsFor(undefined)
    const page = (n: number) => `Page ${n} text about routers and their firewall settings in some detail. `.repeat(6)
    const chunks = chunkDocument(`${page(1)}\n\n${PAGE_BREAK}\n\nTiny page.\n\n${PAGE_BREAK}\n\n${page(3)}`, options)
    expect(chunks).toContain('Tiny page.')
  })
})

describe('fusion fitted on the labelled set', () => {
  test('settings are stored per embedder id; the built-in embedder has fitted ones, any other gets the defaults', () => {
    expect(isFitted('builtin/hash-embed-384')).toBe(true)
    const fitted = rankingParams('builtin/hash-embed-384')
    expect(fitted.vectorWeight + fitted.keywordWeight + fitted.rareWeight).toBeCloseTo(1, 6)
    expect(isFitted('Xenova/some-other-model')).toBe(false)
    expect(rankingParams('Xenova/some-other-model')).toEqual(stored.default)
  })

  test('the labelled set holds two Debian corpora and identifier look-ups, split into a fitting and a checking half', () => {
    const corpora = new Set(labelled.queries.map((q) => q.corpus))
    for (const name of ['postgresql-doc-15', 'git-doc', 'identifiers']) expect(corpora.has(name)).toBe(true)
    for (const name of ['postgresql-doc-15', 'git-doc', 'identifiers']) {
      const fit = labelled.queries.filter((q) => q.corpus === name && q.half === 'fit').length
      const check = labelled.queries.filter((q) => q.corpus === name && q.half === 'check').length
      expect(fit).toBeGreaterThan(100)
      expect(Math.abs(fit - check) / (fit + check)).toBeLessThan(0.05)
    }
    // No query is in both halves.
    const fit = new Set(labelled.queries.filter((q) => q.half === 'fit').map((q) => `${q.corpus}|${q.query}`))
    expect(labelled.queries.filter((q) => q.half === 'check' && fit.has(`${q.corpus}|${q.query}`))).toEqual([])
  })
})

describe('repeated passages', () => {
  test('a passage ingested twice takes one place in the results while other passages are left; alone, it still fills them', async () => {
    const { rag } = service()
    const backup = 'Backups run nightly at two; restore a backup with harbor restore and the snapshot id.'
    await rag.ingest('u', 'kb', [
      { id: 'backup-v1', content: backup },
      { id: 'backup-v2', content: backup },
      { id: 'backup-copy', content: backup },
      { id: 'restore-howto', content: 'To restore files from a nightly snapshot, list snapshots first, then restore the one you need.' },
      { id: 'holidays', content: 'Holidays are requested in the HR portal two weeks ahead.' },
    ])
    const { results } = await rag.search('u', 'kb', 'restore a nightly backup', 2)
    expect(results.map((r) => r.content)).toEqual([backup, 'To restore files from a nightly snapshot, list snapshots first, then restore the one you need.'])
    const all = await rag.search('u', 'kb', 'restore a nightly backup', 5)
    expect(all.results.map((r) => r.id).sort()).toEqual(['backup-copy', 'backup-v1', 'backup-v2', 'holidays', 'restore-howto'])
    expect(all.results.slice(0, 2).map((r) => r.id)).toContain('restore-howto')
  })
})
