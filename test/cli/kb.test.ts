import { describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import set from '../fixtures/kb-labelled.json'
import { makeServer } from '../helpers'
import { tempDir } from '../temp'
import { liveServer } from './live-server'
import { HTML_PAGE, MARKDOWN, makeDocx, makeEncryptedPdf, makeImageOnlyPdf, makePdf } from '../modules/kb/files'

const root = tempDir('cli-kb')
const server = makeServer({ dataDir: join(root, 'data'), rateLimitMax: 100_000 })
const live = liveServer(server.app, { login: true })
const { run } = live

describe('uagent rag ingest, docs, doc; chat --collection', () => {
  test('a folder of mixed files: PDFs and Word files go through the upload route, failures are printed with reasons and exit 1', async () => {
    const folder = join(root, 'manuals')
    mkdirSync(join(folder, 'word'), { recursive: true })
    writeFileSync(join(folder, 'router.pdf'), await makePdf([['Router manual.', 'Plug the WAN cable into the yellow port.'], ['The reset button is on the back.']]))
    writeFileSync(join(folder, 'word/leave.docx'), makeDocx('Leave Policy', 'Annual leave', ['Every employee receives 30 days of annual leave.']))
    writeFileSync(join(folder, 'office.html'), HTML_PAGE)
    writeFileSync(join(folder, 'deploy.md'), MARKDOWN)
    writeFileSync(join(folder, 'locked.pdf'), await makeEncryptedPdf())
    writeFileSync(join(folder, 'scan.pdf'), await makeImageOnlyPdf())
    const ingest = await run(['rag', 'ingest', 'manuals', folder])
    expect(ingest.code).toBe(1)
    expect(ingest.stdout).toContain('4 of 6 documents ingested into manuals')
    expect(ingest.stdout).toContain('failed locked.pdf: encrypted PDF')
    expect(ingest.stdout).toContain('failed scan.pdf: no text layer')
    expect(ingest.stderr).toContain('error INGEST_FAILED: 2 of 6 files failed')

    const docs = await run(['--json', 'rag', 'docs', 'manuals'])
    expect(docs.code).toBe(0)
    const listed = JSON.parse(docs.stdout)
    expect(listed.documents.map((d: any) => d.id)).toEqual(['deploy.md', 'office.html', 'router.pdf', 'word/leave.docx'])
    expect(listed.documents.find((d: any) => d.id === 'router.pdf')).toMatchObject({ type: 'pdf', title: 'Router Manual', chunks: 2 })

    const human = await run(['rag', 'docs', 'manuals'])
    expect(human.stdout).toMatch(/^ID\s+TITLE\s+TYPE\s+CHUNKS\s+SIZE\s+INGESTED\s+SOURCE\s+HASH/)
    expect(human.stdout).toContain('Leave Policy')

    const doc = await run(['rag', 'doc', 'manuals', 'deploy.md'])
    expect(doc.code).toBe(0)
    expect(doc.stdout).toContain('docker run -p 3000:3000 \\\n  -v data:/data uagent')
    const html = JSON.parse((await run(['--json', 'rag', 'doc', 'manuals', 'office.html'])).stdout)
    expect(html.text).toContain('Use the <guest> desk & sign in.')
    expect((await run(['rag', 'doc', 'manuals', 'missing.md'])).code).toBe(1)

    const search = JSON.parse((await run(['--json', 'rag', 'search', 'manuals', 'reset', 'button', '--limit', '1'])).stdout)
    expect(search.results[0]).toMatchObject({ id: 'router.pdf', metadata: { page: 2 } })

    // Run again: the extracted files are unchanged on the server, the failures fail again.
    const again = await run(['--json', 'rag', 'ingest', 'manuals', folder])
    expect(JSON.parse(again.stdout)).toMatchObject({ failed: 2 })
    expect(again.code).toBe(1)
  }, 60_000)

  test('the CLI decodes every HTML entity of a page it ingests itself', async () => {
    const folder = join(root, 'html')
    mkdirSync(folder)
    writeFileSync(join(folder, 'page.htm'), '<p>Use &#x3C;tag&#x3E; &mdash; not &lt;b&gt; &amp; &#169; &hellip;</p><script>alert(1)</script>')
    expect((await run(['rag', 'ingest', 'entities', folder])).code).toBe(0)
    const doc = JSON.parse((await run(['--json', 'rag', 'doc', 'entities', 'page.htm'])).stdout)
    expect(doc.text).toBe('Use <tag> — not <b> & © …')
  }, 60_000)

  test('chat --collection grounds the reply and prints its sources', async () => {
    await live.api('POST', '/rag/ingest', { collection: 'harbor', documents: set.documents })
    const streamed = await run(['chat', '--collection', 'harbor', 'How', 'long', 'are', 'deleted', 'files', 'kept', 'in', 'the', 'trash?'])
    expect(streamed.code).toBe(0)
    expect(streamed.stdout).toContain('kept for 30 days')
    expect(streamed.stderr).toContain('[1] Trash and restoring files (harbor/trash.md)')
    const json = JSON.parse((await run(['--json', 'chat', '--collection', 'harbor', 'What port does Harbor listen on by default?'])).stdout)
    expect(json.metadata.sources[0]).toMatchObject({ id: 'install.md', collection: 'harbor' })
    expect((await run(['chat', '--collection', 'nobody', 'hi'])).code).toBe(1)
  }, 60_000)
})
