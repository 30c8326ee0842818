import { describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeServer } from '../helpers'
import { tempDir } from '../temp'
import { liveServer } from './live-server'
import { HTML_PAGE, makeDocx, makeImageOnlyPdf, makePdf } from '../modules/kb/files'
import { makeMbox } from '../modules/extract/files'

const root = tempDir('sync')
const server = makeServer({ dataDir: join(root, 'data'), rateLimitMax: 100_000 })
const live = liveServer(server.app, { login: true })
const { run, spawn } = live

async function sync(...args: string[]) {
  const result = await run(['--json', 'rag', 'sync', ...args])
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : null }
}

const api = (method: string, path: string, body?: unknown) => live.request(method, path, body)
const listing = async (collection: string) => (await api('GET', `/rag/collections/${collection}/documents?limit=10000`)).json.documents as any[]
const search = async (collection: string, query: string) => (await api('POST', '/rag/search', { collection, query, limit: 10 })).json.results as any[]

/** 50 files: 46 notes (some in subfolders), a PDF, a Word file, an HTML page and a JSON file. */
async function makeFolder(dir: string) {
  mkdirSync(join(dir, 'sub/deeper'), { recursive: true })
  for (let i = 0; i < 46; i++) {
    const folder = i % 3 === 0 ? 'sub/' : i % 5 === 0 ? 'sub/deeper/' : ''
    writeFileSync(join(dir, `${folder}note-${i}.md`), `# Note ${i}\n\nThis note talks about subject${i} and its details.\n`)
  }
  writeFileSync(join(dir, 'note-1.md'), '# Note 1\n\nThe quokka lives on Rottnest Island.\n')
  writeFileSync(join(dir, 'note-2.md'), '# Note 2\n\nThe numbat eats termites.\n')
  writeFileSync(join(dir, 'note-4.md'), '# Note 4\n\nThe platypus lays eggs.\n')
  writeFileSync(join(dir, 'sub/manual.pdf'), await makePdf([['Router manual.'], ['Reset the router with the pin on the back.']]))
  writeFileSync(join(dir, 'sub/leave.docx'), makeDocx('Leave', 'Leave', ['Thirty days of annual leave.']))
  writeFileSync(join(dir, 'office.html'), HTML_PAGE)
  writeFileSync(join(dir, 'settings.json'), '{"retention_days": 35}')
}

describe('uagent rag sync', () => {
  test('first sync, then 2 changed, 1 deleted, 1 added with --delete: exactly 1 added, 2 changed, 47 unchanged, 1 removed; search follows; a run with no change sends nothing', async () => {
    const dir = join(root, 'notes')
    await makeFolder(dir)
    const first = await sync('notes', dir)
    expect(first.code).toBe(0)
    expect(first.summary.added).toHaveLength(50)
    expect(first.summary).toMatchObject({ changed: [], unchanged: 0, removed: [], failed: [] })
    expect(first.summary.added).toContain('sub/manual.pdf')
    expect(first.summary.added).toContain('sub/deeper/note-5.md')
    const docs = await listing('notes')
    expect(docs).toHaveLength(50)
    const pdf = docs.find((d) => d.id === 'sub/manual.pdf')
    expect(pdf).toMatchObject({ type: 'pdf', source: join(dir, 'sub/manual.pdf') })
    expect(pdf.contentHash).toBe(new Bun.CryptoHasher('sha256').update(readFileSync(join(dir, 'sub/manual.pdf'))).digest('hex'))

    writeFileSync(join(dir, 'note-1.md'), '# Note 1\n\nThe wombat digs burrows.\n')
    writeFileSync(join(dir, 'note-2.md'), '# Note 2\n\nThe numbat eats termites, and ants too.\n')
    unlinkSync(join(dir, 'note-4.md'))
    writeFileSync(join(dir, 'sub/new-note.md'), '# New\n\nThe echidna has spines.\n')
    const second = await sync('notes', dir, '--delete')
    expect(second.code).toBe(0)
    expect(second.summary).toEqual({ added: ['sub/new-note.md'], changed: ['note-1.md', 'note-2.md'], unchanged: 47, removed: ['note-4.md'], failed: [] })

    expect((await search('notes', 'wombat burrows'))[0]).toMatchObject({ id: 'note-1.md' })
    expect((await search('notes', 'quokka Rottnest')).some((r) => r.content.includes('quokka'))).toBe(false)
    expect((await search('notes', 'platypus eggs')).some((r) => r.id === 'note-4.md')).toBe(false)
    expect((await search('notes', 'echidna spines'))[0].id).toBe('sub/new-note.md')

    const before = await listing('notes')
    const third = await sync('notes', dir, '--delete')
    expect(third.summary).toEqual({ added: [], changed: [], unchanged: 50, removed: [], failed: [] })
    // Nothing was sent: every document is the one written before.
    expect(await listing('notes')).toEqual(before)

    // --dry-run prints the plan and changes nothing.
    writeFileSync(join(dir, 'note-2.md'), '# Note 2\n\nChanged once more.\n')
    unlinkSync(join(dir, 'note-7.md'))
    const dry = await sync('notes', dir, '--delete', '--dry-run')
    expect(dry.summary).toEqual({ added: [], changed: ['note-2.md'], unchanged: 48, removed: ['note-7.md'], failed: [] })
    expect(await listing('notes')).toEqual(before)
    const human = await run(['rag', 'sync', 'notes', dir, '--delete', '--dry-run'])
    expect(human.stdout).toContain('would change note-2.md')
    expect(human.stdout).toContain('would remove note-7.md')
    expect(human.stdout).toContain('Dry run (nothing changed): 0 added, 1 changed, 48 unchanged, 1 removed, 0 failed')

    const docsTable = await run(['rag', 'docs', 'notes', '--prefix', 'sub/manual'])
    expect(docsTable.stdout).toContain('notes/sub/manual.pdf')
    expect(docsTable.stdout).toContain(pdf.contentHash.slice(0, 12))
  }, 60_000)

  test("another user's collection is 404 to the listings sync reads", async () => {
    const dir = join(root, 'mine')
    mkdirSync(dir)
    writeFileSync(join(dir, 'private.md'), 'My private note.')
    expect((await sync('private', dir)).code).toBe(0)
    const other = await server.userSession('sync-other@example.com')
    const theirs = await fetch(`${live.base}/rag/collections/private/documents?view=hashes`, { headers: { authorization: `Bearer ${other.accessToken}` } })
    expect(theirs.status).toBe(404)
    const document = await fetch(`${live.base}/rag/collections/private/documents/private.md`, { headers: { authorization: `Bearer ${other.accessToken}` } })
    expect(document.status).toBe(404)
  }, 60_000)

  test('.uagentignore, --exclude and --include are honoured; hidden folders and node_modules are skipped', async () => {
    const dir = join(root, 'ignoring')
    mkdirSync(join(dir, 'drafts'), { recursive: true })
    mkdirSync(join(dir, '.git'), { recursive: true })
    mkdirSync(join(dir, 'node_modules/pkg'), { recursive: true })
    writeFileSync(join(dir, 'keep.md'), 'kept')
    writeFileSync(join(dir, 'secret.env.md'), 'ignored by pattern')
    writeFileSync(join(dir, 'drafts/wip.md'), 'ignored folder')
    writeFileSync(join(dir, 'notes.tmp'), 'excluded by flag')
    writeFileSync(join(dir, 'photo.png'), 'media is skipped by default')
    writeFileSync(join(dir, '.git/config'), 'hidden')
    writeFileSync(join(dir, 'node_modules/pkg/readme.md'), 'dependency')
    writeFileSync(join(dir, '.uagentignore'), '# comments work\n*.env.md\ndrafts/\n')
    const result = await sync('ignoring', dir, '--exclude', '*.tmp')
    expect(result.summary.added).toEqual(['keep.md'])
    const only = await sync('including', dir, '--include', '**/*.md')
    expect(only.summary.added).toEqual(['keep.md'])
  }, 60_000)

  test('--prefix keeps two folders apart in one collection, and --delete on one leaves the other alone', async () => {
    const a = join(root, 'team-a')
    const b = join(root, 'team-b')
    mkdirSync(a)
    mkdirSync(b)
    writeFileSync(join(a, 'readme.md'), 'Team A builds the compiler.')
    writeFileSync(join(a, 'plan.md'), 'Team A plans the release.')
    writeFileSync(join(b, 'readme.md'), 'Team B runs the servers.')
    expect((await sync('teams', a, '--prefix', 'a')).summary.added).toEqual(['a/plan.md', 'a/readme.md'])
    expect((await sync('teams', b, '--prefix', 'b/')).summary.added).toEqual(['b/readme.md'])
    unlinkSync(join(a, 'plan.md'))
    const pruned = await sync('teams', a, '--prefix', 'a', '--delete')
    expect(pruned.summary).toEqual({ added: [], changed: [], unchanged: 1, removed: ['a/plan.md'], failed: [] })
    expect((await listing('teams')).map((d) => d.id)).toEqual(['a/readme.md', 'b/readme.md'])
  }, 60_000)

  test('a file that cannot be extracted is reported with its reason and a non-zero exit; the others are synced', async () => {
    const dir = join(root, 'bad')
    mkdirSync(dir)
    writeFileSync(join(dir, 'good.md'), 'A good note about gardening.')
    writeFileSync(join(dir, 'scan.pdf'), await makeImageOnlyPdf())
    writeFileSync(join(dir, 'blob.dat'), new Uint8Array([0, 1, 2, 3, 255]))
    const result = await sync('bad', dir)
    expect(result.code).toBe(1)
    expect(result.summary.added).toEqual(['good.md'])
    expect(result.summary.failed).toEqual([
      { id: 'blob.dat', reason: expect.stringContaining('binary file') },
      { id: 'scan.pdf', reason: expect.stringContaining('no text layer') },
    ])
    expect(result.stderr).toContain('error SYNC_FAILED')
    const human = await run(['rag', 'sync', 'bad', dir])
    expect(human.code).toBe(1)
    expect(human.stdout).toContain('failed scan.pdf: no text layer')
  }, 60_000)

  test('a sync killed halfway, run again, ends in the same state as one clean run', async () => {
    const dir = join(root, 'interrupted')
    mkdirSync(dir)
    for (let i = 0; i < 60; i++) writeFileSync(join(dir, `doc-${i}.md`), `# Doc ${i}\n\n${`Paragraph about item ${i}. `.repeat(40)}`)
    const proc = spawn(['rag', 'sync', 'halfway', dir, '--concurrency', '1'])
    for (let i = 0; i < 600; i++) {
      const listed = await api('GET', '/rag/collections/halfway/documents?view=hashes&limit=1')
      if (listed.status === 200 && listed.json.total >= 5) break
      await Bun.sleep(10)
    }
    proc.kill('SIGKILL')
    await proc.exited
    const partial = (await api('GET', '/rag/collections/halfway/documents?view=hashes&limit=10000')).json.total
    expect(partial).toBeGreaterThanOrEqual(5)
    expect(partial).toBeLessThan(60)
    const resumed = await sync('halfway', dir)
    expect(resumed.code).toBe(0)
    expect(resumed.summary.unchanged + resumed.summary.added.length).toBe(60)
    expect(resumed.summary.added.length).toBeLessThanOrEqual(60 - partial)
    expect((await sync('clean', dir)).code).toBe(0)
    const state = async (collection: string) =>
      (await api('GET', `/rag/collections/${collection}/documents?view=hashes&limit=10000`)).json.documents.map((d: any) => [d.id, d.contentHash])
    expect(await state('halfway')).toEqual(await state('clean'))
    const chunks = async (collection: string) => (await listing(collection)).map((d) => [d.id, d.chunks])
    expect(await chunks('halfway')).toEqual(await chunks('clean'))
  }, 60_000)

  test('--watch picks up a new file, a change, a rename and a deletion within 3 s each, one line per change, until Ctrl-C', async () => {
    const dir = join(root, 'watched')
    mkdirSync(dir)
    writeFileSync(join(dir, 'first.md'), 'The first note.')
    const proc = spawn(['rag', 'sync', 'watched', dir, '--watch'])
    let out = ''
    const reader = proc.stdout.getReader()
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        out += new TextDecoder().decode(value)
      }
    })()
    const waitFor = async (line: string) => {
      const started = Date.now()
      while (!out.includes(line)) {
        if (Date.now() - started > 3000) throw new Error(`no "${line}" within 3 s; output so far:\n${out}`)
        await Bun.sleep(20)
      }
      return Date.now() - started
    }
    try {
      await waitFor('1 added')
      writeFileSync(join(dir, 'second.md'), 'The second note, about lighthouses.')
      await waitFor('added   second.md')
      expect((await search('watched', 'lighthouses'))[0].id).toBe('second.md')
      // A burst of saves is one update.
      for (let i = 0; i < 5; i++) writeFileSync(join(dir, 'first.md'), `The first note, edit ${i}, about harbours.`)
      await waitFor('changed first.md')
      expect((await search('watched', 'harbours'))[0].content).toContain('edit 4')
      expect((out.match(/changed first\.md/g) ?? []).length).toBe(1)
      // A rename is a deletion plus an addition.
      renameSync(join(dir, 'first.md'), join(dir, 'renamed.md'))
      await waitFor('added   renamed.md')
      await waitFor('removed first.md')
      unlinkSync(join(dir, 'second.md'))
      await waitFor('removed second.md')
      expect((await listing('watched')).map((d) => d.id)).toEqual(['renamed.md'])
    } finally {
      proc.kill('SIGINT')
    }
    expect(await proc.exited).toBe(0)
  }, 60_000)

  test('an .mbox syncs as one document per message (<file>#<Message-ID>): unchanged when the file is, kept by --delete, re-sent when a message is added', async () => {
    const dir = join(root, 'mail')
    mkdirSync(dir, { recursive: true })
    const mail = (n: number) => ({ from: 'ana@example.com', to: 'ops@example.com', subject: `Shift ${n}`, date: 'Tue, 03 Mar 2026 09:15:00 +0000', messageId: `<shift-${n}@example.com>`, body: `Shift ${n} notes: the boiler pressure was fine.` })
    writeFileSync(join(dir, 'ops.mbox'), makeMbox([mail(1), mail(2)]))
    writeFileSync(join(dir, 'readme.md'), '# Mail\n\nThe operations mailbox.\n')
    const first = await sync('mail', dir)
    expect(first.code).toBe(0)
    expect(first.summary.added).toEqual(['ops.mbox', 'readme.md'])
    expect((await listing('mail')).map((d) => d.id)).toEqual(['ops.mbox#shift-1@example.com', 'ops.mbox#shift-2@example.com', 'readme.md'])
    const again = await sync('mail', dir, '--delete')
    expect(again.summary).toMatchObject({ added: [], changed: [], unchanged: 2, removed: [] })
    expect(await listing('mail')).toHaveLength(3)
    writeFileSync(join(dir, 'ops.mbox'), makeMbox([mail(1), mail(2), mail(3)]))
    const third = await sync('mail', dir, '--delete')
    expect(third.summary).toMatchObject({ added: [], changed: ['ops.mbox'], unchanged: 1, removed: [] })
    expect((await listing('mail')).map((d) => d.id)).toEqual(['ops.mbox#shift-1@example.com', 'ops.mbox#shift-2@example.com', 'ops.mbox#shift-3@example.com', 'readme.md'])
  }, 60_000)
})
