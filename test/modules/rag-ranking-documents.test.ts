// Issue 37, point 6: ranking on real documentation questions. The first ten results hold more
// documents (a document's further passages give way to other documents' first ones), and a
// question is searched by what it asks about, not by the words that only make it a question.
import { describe, expect, test } from 'bun:test'
import { questionFocus } from '../../src/modules/rag/ranking/question'
import { type Candidate, rankCandidates, REPEAT_SHARE } from '../../src/modules/rag/ranking/scoring'
import { inMemoryRag } from '../rag-service'

const PARAMS = { vectorWeight: 0.5, keywordWeight: 0.5, rareWeight: 0, bm25Half: 4, rareShare: 0.05, minFeatures: 0, vectorPool: 40, keywordPool: 40, relevanceFloor: 0.1 }
const candidate = (chunkId: number, similarity: number, document?: string): Candidate => ({ chunkId, similarity, held: [], features: 20, vectorRank: chunkId, keywordRank: Infinity, document })

describe('several passages of one document', () => {
  test('each keeps REPEAT_SHARE of its score per better passage of its document, and the results stay sorted by score', () => {
    const ranked = rankCandidates([candidate(1, 0.9, 'a'), candidate(2, 0.85, 'a'), candidate(3, 0.8, 'a'), candidate(4, 0.6, 'b')], { terms: [], chunks: 100 }, PARAMS)
    expect(ranked.map((hit) => hit.chunkId)).toEqual([1, 4, 2, 3])
    expect(ranked.map((hit) => hit.score)).toEqual([0.45, 0.3, Math.round(0.425 * REPEAT_SHARE * 10_000) / 10_000, Math.round(0.4 * REPEAT_SHARE ** 2 * 10_000) / 10_000])
  })

  test('chunks of no known document, or each of its own, keep their scores', () => {
    const ranked = rankCandidates([candidate(1, 0.9), candidate(2, 0.85), candidate(3, 0.8, 'c'), candidate(4, 0.6, 'd')], { terms: [], chunks: 100 }, PARAMS)
    expect(ranked.map((hit) => [hit.chunkId, hit.score])).toEqual([[1, 0.45], [2, 0.425], [3, 0.4], [4, 0.3]])
  })

  test('in search, a document matching in every section gives its second passage at most REPEAT_SHARE of its first one\'s score', async () => {
    const { rag } = inMemoryRag()
    const filler = 'Filler text about other matters entirely, written at length so that chunks split here. '.repeat(8)
    const manual = Array.from({ length: 8 }, (_, i) => `Section ${i}. The replication slot keeps WAL segments until every standby has received them; slot ${i} is monitored. ${filler}`).join('\n\n')
    await rag.ingest('u', 'docs', [
      { id: 'manual', content: manual },
      { id: 'faq', content: 'Why does disk usage grow on the primary? An inactive replication slot retains old WAL: drop the slot, or bring its standby back online.' },
    ])
    const { results } = await rag.search('u', 'docs', 'replication slot keeps WAL segments', 3)
    expect(results.length).toBe(3)
    const own = results.filter((r) => r.id === 'manual')
    expect(own.length).toBeGreaterThanOrEqual(2)
    expect(own[1]!.score).toBeLessThanOrEqual(Math.round(own[0]!.score * REPEAT_SHARE * 10_000) / 10_000 + 0.0001)
    for (let i = 1; i < results.length; i++) expect(results[i]!.score).toBeLessThanOrEqual(results[i - 1]!.score)
    // Passages to answer from (/rag/answer, grounded chat, agents) are ranked each for itself: the second passage keeps its score.
    const passages = (await rag.search('u', 'docs', 'replication slot keeps WAL segments', 3, null, { passages: true })).results.filter((r) => r.id === 'manual')
    expect(passages.length).toBeGreaterThanOrEqual(2)
    expect(passages[1]!.score).toBeGreaterThan(passages[0]!.score * REPEAT_SHARE + 0.001)
  })
})

describe('what a question asks about', () => {
  test('the frame of a question is taken off: leading "how do I", "which command can", "where can I read about", a closing "work"', () => {
    expect(questionFocus('how do I use polygons')).toBe('polygons')
    expect(questionFocus('How does WAL configuration work?')).toBe('WAL configuration')
    expect(questionFocus('which command can print a sequence of numbers')).toBe('print a sequence of numbers')
    expect(questionFocus('what tool is there to get locale-specific information')).toBe('get locale-specific information')
    expect(questionFocus('where can I read about locale support')).toBe('locale support')
    expect(questionFocus('Can you tell me about WAL?')).toBe('WAL?')
    expect(questionFocus('is there a way to undo a commit')).toBe('undo a commit')
    expect(questionFocus('which program should I use for backups')).toBe('backups')
  })

  test('asking for help or information is a frame too: "I need help with", "help me with", "I have a question about", "I\'m looking for docs on", "where is … documented"', () => {
    expect(questionFocus('I need help with backup and restore')).toBe('backup and restore')
    expect(questionFocus('we would like some information on locale support')).toBe('locale support')
    expect(questionFocus('help me with git rebase')).toBe('git rebase')
    expect(questionFocus('I have a question about WAL archiving')).toBe('WAL archiving')
    expect(questionFocus("I'm looking for docs on pg_dump")).toBe('pg_dump')
    expect(questionFocus('information about vacuum')).toBe('vacuum')
    expect(questionFocus('where is continuous archiving documented?')).toBe('continuous archiving')
    expect(questionFocus('what does the manual say about triggers')).toBe('triggers')
    // "help" as a word of what is asked about stays; so does a frame with nothing after it.
    expect(questionFocus('help files for vim')).toBe('help files for vim')
    expect(questionFocus('where is it documented?')).toBe('where is it documented?')
    expect(questionFocus('I need help')).toBe('I need help')
  })

  test('words inside the question, identifiers, quotes and a question that is nothing but its frame stay as they are', () => {
    expect(questionFocus('what tool is there to tool to trace kernel memory')).toBe('tool to trace kernel memory')
    expect(questionFocus('which command do I use to print "hello world"?')).toBe('print "hello world"?')
    expect(questionFocus('ERR_SSL_PROTOCOL_ERROR')).toBe('ERR_SSL_PROTOCOL_ERROR')
    expect(questionFocus('how do I')).toBe('how do I')
    expect(questionFocus('what is the abstract for')).toBe('what is the abstract for')
    expect(questionFocus('find files by name')).toBe('find files by name')
  })

  test('a question framed with "which command" finds the page about the task, not the page that talks about commands and tools', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'docs', [
      { id: 'seq', content: 'seq writes numbers from FIRST to LAST in steps of INCREMENT, one per line.' },
      { id: 'tools', content: 'Which command or tool to use? The shell runs each command you type: a command can be a builtin, a tool or a program. Use the tool that works.' },
      { id: 'print', content: 'lp sends files to the printer: to print a file, use lp FILE; print queues are shown by lpstat.' },
      ...Array.from({ length: 6 }, (_, i) => ({ id: `filler-${i}`, content: `Note ${i}: backups run nightly and are kept for ${i + 2} weeks on the archive server.` })),
    ])
    for (const question of ['which command can I use to write numbers', 'which tool can I use to write a list of numbers']) {
      const { results } = await rag.search('u', 'docs', question, 3)
      expect({ question, first: results[0]!.id }).toEqual({ question, first: 'seq' })
    }
  })
})

describe('neighbouring words of the question near each other', () => {
  test('a passage holding "file mode bits" together ranks above passages that hold the three words apart', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'docs', [
      { id: 'apart-1', content: 'Each file has an owner and a group. A terminal mode is set by stty, a file by chmod. Bits of a checksum are printed by cksum for each file.' },
      { id: 'apart-2', content: 'A file may be a link to another file. In batch mode the program reads commands from a file. Parity bits are checked on a serial line.' },
      { id: 'together', content: 'Permissions are kept in the file mode bits: read, write and execute for the owner, the group and all others on the system.' },
      ...Array.from({ length: 8 }, (_, i) => ({ id: `filler-${i}`, content: `Note ${i}: backups run nightly and are kept for ${i + 2} weeks on the archive server.` })),
    ])
    for (const question of ['structure of file mode bits', 'what are file mode bits']) {
      const { results } = await rag.search('u', 'docs', question, 3)
      expect({ question, first: results[0]!.id }).toEqual({ question, first: 'together' })
    }
  })

  test('pairs are the content words at most three words apart, held in either order within that distance and two more', async () => {
    const { wordPairs, pairShare } = await import('../../src/modules/rag/ranking/proximity')
    const term = (word: string, df = 5) => ({ word, tokens: [word], df, phrase: false })
    const terms = { terms: [term('file'), term('mode'), term('bits'), term('of', 90)], chunks: 100, offsets: new Map() }
    const pairs = wordPairs('structure of file mode bits', terms)
    expect(pairs.map((p) => [p.first[0], p.second[0], p.gap])).toEqual([['file', 'mode', 1], ['mode', 'bits', 1]])
    expect(pairShare(pairs, new Map([['file', [10]], ['mode', [11]], ['bits', [12]]]))).toBe(1)
    expect(pairShare(pairs, new Map([['bits', [3]], ['mode', [5]], ['file', [40]]]))).toBe(0.5)
    expect(pairShare(pairs, new Map([['file', [1]], ['mode', [20]], ['bits', [40]]]))).toBe(0)
  })
})

describe("the question's words in a document's name", () => {
  test('the file name (extensions left out) and the metadata title are read; a word matches whole, by its stem, or as the start of a name word', async () => {
    const { nameQuery, nameShare, nameWords } = await import('../../src/modules/rag/ranking/names')
    expect(nameWords('man/man1/sha256sum.1.gz', {})).toEqual(['sha256sum'])
    expect(nameWords('docs/html/sql-createtable.html', { title: 'CREATE TABLE' })).toEqual(['sql', 'createtable', 'create', 'table'])
    const terms = { terms: ['compute', 'check', 'sha256', 'digest', 'tables'].map((word) => ({ word, tokens: [word], df: 3, phrase: false })), chunks: 100, offsets: new Map() }
    const query = nameQuery('compute and check SHA256 message digest', terms)
    expect(query.map((q) => q.word)).toEqual(['compute', 'check', 'sha256', 'digest'])
    expect(nameShare(query, ['sha256sum'])).toBe(0.25)
    expect(nameShare(nameQuery('tables', terms), ['create', 'table'])).toBe(1)
    expect(nameShare(query, ['ls'])).toBe(0)
  })

  test('of two pages saying the same, the one named after what is asked comes first, by a clear margin', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'docs', [
      { id: 'man/man1/cksum.1.gz', content: 'Print or check SHA256 checksums of files, one by one.' },
      { id: 'man/man1/sha256sum.1.gz', content: 'Print or check SHA256 checksums of files, line by line.' },
      ...Array.from({ length: 6 }, (_, i) => ({ id: `notes/note-${i}.txt`, content: `Note ${i}: backups run nightly and are kept for ${i + 2} weeks on the archive server.` })),
    ])
    const { results } = await rag.search('u', 'docs', 'print SHA256 checksums', 3)
    expect(results.slice(0, 2).map((r) => r.id)).toEqual(['man/man1/sha256sum.1.gz', 'man/man1/cksum.1.gz'])
    expect(results[0]!.score - results[1]!.score).toBeGreaterThan(0.02)
  })
})
