import type { Command } from 'commander'
import { ApiClient } from '../client'
import { bold, dim, emit, example, globals, keyValues, table } from '../output'
import { integer } from '../parse'

/** The end of a long path is the part that tells files apart. */
const tail = (text: string, max: number) => (text.length > max ? `…${text.slice(-(max - 1))}` : text)

const collectionPath = (collection: string) => `/rag/collections/${encodeURIComponent(collection)}`

/** A size in bytes, as people read it. */
export function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`
}

/** `rag docs` and `rag doc`: what a collection holds. */
export function registerRagDocuments(rag: Command): void {
  example(
    rag
      .command('docs <collection>')
      .description('List the documents of a collection (id, title, type, chunks, size, source, short hash)')
      .option('--prefix <prefix>', 'only ids starting with this')
      .option('-n, --limit <n>', 'documents per page (1-10000)', integer, 100)
      .option('--offset <n>', 'skip this many', integer, 0)
      .action(async (collection: string, options: { prefix?: string; limit: number; offset: number }, command: Command) => {
        const query = new URLSearchParams({ limit: String(options.limit), offset: String(options.offset) })
        if (options.prefix) query.set('prefix', options.prefix)
        const body = await new ApiClient(globals(command)).json('GET', `${collectionPath(collection)}/documents?${query}`)
        emit(command, body, () => {
          console.log(
            table(
              ['ID', 'TITLE', 'TYPE', 'CHUNKS', 'SIZE', 'INGESTED', 'SOURCE', 'HASH'],
              body.documents.map((d: any) => [d.id, d.title, d.type, d.chunks, humanBytes(d.bytes), d.ingestedAt.slice(0, 16).replace('T', ' '), tail(d.source ?? '-', 40), d.contentHash.slice(0, 12)]),
              40,
            ),
          )
          console.log(dim(`${body.documents.length} of ${body.total}${body.hasMore ? ` (more with --offset ${body.offset + body.documents.length})` : ''}`))
        })
      }),
    'uagent rag docs handbook --prefix guides/',
  )
  example(
    rag
      .command('doc <collection> <id>')
      .description('Show one document: its metadata and full extracted text')
      .action(async (collection: string, id: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', `${collectionPath(collection)}/documents/${encodeURIComponent(id)}`)
        emit(command, body, () => {
          console.log(
            keyValues([
              ['id', body.id],
              ['title', body.title],
              ['type', body.type + (body.pages ? ` (${body.pages} pages)` : '')],
              ['chunks', body.chunks],
              ['size', humanBytes(body.bytes)],
              ['ingested', body.ingestedAt],
              ['source', body.source ?? '-'],
              ['sha256', body.contentHash],
            ]),
          )
          console.log(`\n${bold('Text')}\n${body.text.replaceAll('\f', '\n')}`)
        })
      }),
    'uagent rag doc handbook guides/vpn.md',
  )
}
