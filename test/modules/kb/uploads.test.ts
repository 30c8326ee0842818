import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeServer } from '../../helpers'
import { formOf, HTML_PAGE, MARKDOWN, makeDocx, makeEncryptedPdf, makeImageOnlyPdf, makePdf } from './files'

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-kb-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function setup(options: Parameters<typeof makeServer>[0] = {}) {
  const server = makeServer({ dataDir, ...options })
  const { accessToken: token } = await server.login()
  const upload = async (collection: string, form: FormData, as = token) => {
    const response = await server.app.handle(
      new Request(`http://localhost/rag/collections/${collection}/files`, { method: 'POST', headers: { authorization: `Bearer ${as}` }, body: form }),
    )
    return { status: response.status, json: (await response.json()) as any }
  }
  return { ...server, token, upload }
}

const PDF_PAGES = [
  ['Router manual, chapter one.', 'Connect the WAN cable to the yellow port.'],
  ['Chapter two covers the firewall.', 'Port forwarding rules live under Advanced settings.'],
]

describe('uploads', () => {
  test('a two-page PDF, a .docx, an HTML page and a Markdown file in one request are extracted, ingested and found', async () => {
    const server = await setup()
    const form = formOf([
      ['manual.pdf', await makePdf(PDF_PAGES)],
      ['leave.docx', makeDocx('Leave Policy 2026', 'Annual leave', ['Every employee receives 30 days of annual leave.', 'Carry-over ends on 31 March.'])],
      ['office.html', HTML_PAGE],
      ['deploy.md', MARKDOWN],
    ])
    const res = await server.upload('docs', form)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ success: true, collection: 'docs', ingested: 4, unchanged: 0, failed: 0 })
    const byName = Object.fromEntries(res.json.files.map((f: any) => [f.name, f]))
    expect(byName['manual.pdf']).toMatchObject({ id: 'manual.pdf', status: 'ingested', type: 'pdf', title: 'Router Manual', pages: 2 })
    expect(byName['leave.docx']).toMatchObject({ status: 'ingested', type: 'docx', title: 'Leave Policy 2026' })
    expect(byName['office.html']).toMatchObject({ status: 'ingested', type: 'html', title: 'Office & Access' })
    expect(byName['deploy.md']).toMatchObject({ status: 'ingested', type: 'markdown', title: 'Deploying the service' })
    for (const file of res.json.files) {
      expect(file.chunks).toBeGreaterThan(0)
      expect(file.contentHash).toMatch(/^[0-9a-f]{64}$/)
    }
    // Uploaded bytes went to a temporary folder in the data dir, which is gone afterwards.
    expect(existsSync(join(dataDir, 'tmp')) ? readdirSync(join(dataDir, 'tmp')) : []).toEqual([])

    const search = (query: string, limit = 1) => server.call('POST', '/rag/search', { token: server.token, body: { collection: 'docs', query, limit } })
    const firewall = (await search('port forwarding firewall rules')).json.results[0]
    expect(firewall).toMatchObject({ id: 'manual.pdf', metadata: { title: 'Router Manual', fileName: 'manual.pdf', type: 'pdf', page: 2 } })
    expect(firewall.content).toContain('Port forwarding rules live under Advanced settings.')
    expect(firewall.content).not.toContain('WAN cable')
    const wan = (await search('WAN cable yellow port')).json.results[0]
    expect(wan).toMatchObject({ id: 'manual.pdf', metadata: { page: 1 } })

    expect((await search('annual leave days carry-over')).json.results[0]).toMatchObject({ id: 'leave.docx', metadata: { title: 'Leave Policy 2026', type: 'docx' } })
    const office = (await search('badge doors visitors')).json.results[0]
    expect(office.id).toBe('office.html')
    expect(office.content).toContain('Use the <guest> desk & sign in.')
    expect(office.content).toContain('7:00 – 19:00')
    expect(office.content).not.toContain('tracking beacon')
    expect(office.content).not.toContain('color: red')
    expect(office.content).not.toMatch(/&[#a-z0-9]+;/i)
    expect(office.content).toContain('- Lost badge: call security\n- Visitors: register a day ahead')

    const deploy = (await search('docker run image port published')).json.results[0]
    expect(deploy.id).toBe('deploy.md')
    expect(deploy.content).toContain('```sh\ndocker build -t uagent .\ndocker run -p 3000:3000 \\\n  -v data:/data uagent\n```')
  }, 60_000)

  // Files that need OCR (an image-only PDF, an image) make the upload a job: test/modules/kb/jobs.test.ts.
  test('an encrypted PDF and a binary file fail with reasons; the others are ingested', async () => {
    const server = await setup()
    const binary = new Uint8Array(256).map((_, i) => i)
    const res = await server.upload(
      'mixed',
      formOf([
        ['locked.pdf', await makeEncryptedPdf()],
        ['blob.dat', binary],
        ['notes.txt', 'Plain notes about the quarterly planning meeting.'],
        ['main.py', 'def greet(name):\n    return f"hello {name}"\n'],
      ]),
    )
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ success: false, ingested: 2, failed: 2 })
    const reason = (name: string) => res.json.files.find((f: any) => f.name === name)
    expect(reason('locked.pdf')).toMatchObject({ status: 'failed', reason: expect.stringContaining('encrypted PDF') })
    expect(reason('blob.dat')).toMatchObject({ status: 'failed', reason: expect.stringContaining('binary file') })
    expect(reason('notes.txt')).toMatchObject({ status: 'ingested', type: 'text' })
    expect(reason('main.py')).toMatchObject({ status: 'ingested', type: 'code' })
    const listed = await server.call('GET', '/rag/collections/mixed/documents', { token: server.token })
    expect(listed.json.documents.map((d: any) => d.id)).toEqual(['main.py', 'notes.txt'])
  }, 60_000)

  test('an id field names the next file; uploading the same bytes again is unchanged', async () => {
    const server = await setup()
    const form = () => formOf([['readme.md', '# Read me\n\nHow to start the service.']], { 'readme.md': 'guides/start.md' })
    const first = await server.upload('ids', form())
    expect(first.json.files[0]).toMatchObject({ name: 'readme.md', id: 'guides/start.md', status: 'ingested' })
    const again = await server.upload('ids', form())
    expect(again.json).toMatchObject({ ingested: 0, unchanged: 1, failed: 0 })
    expect(again.json.files[0]).toMatchObject({ id: 'guides/start.md', status: 'unchanged', contentHash: first.json.files[0].contentHash })
  }, 60_000)

  test('a body over the request size limit is 413; a body that is not multipart is 400', async () => {
    const server = await setup({ maxRequestSize: '64kb', maxRequestBytes: 64 * 1024 })
    const big = await server.upload('big', formOf([['big.txt', 'word '.repeat(20_000)]]))
    expect(big.status).toBe(413)
    expect(big.json.code).toBe('PAYLOAD_TOO_LARGE')
    // Without a Content-Length (a streamed body), the limit is applied while reading.
    const encoded = new Response(formOf([['big.txt', 'word '.repeat(20_000)]]))
    const chunked = await server.app.handle(
      new Request('http://localhost/rag/collections/big/files', {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': encoded.headers.get('content-type')! },
        body: encoded.body,
      }),
    )
    expect(chunked.status).toBe(413)
    const json = await server.call('POST', '/rag/collections/big/files', { token: server.token, body: { files: [] } })
    expect(json.status).toBe(400)
    expect(json.json.code).toBe('VALIDATION_ERROR')
    expect((await server.call('GET', '/rag/collections', { token: server.token })).json.collections).toEqual([])
  }, 60_000)
})
