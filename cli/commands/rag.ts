import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { bold, dim, emit, example, globals, progressBar, table } from '../output'
import { decimal, integer } from '../parse'
import { batches, collectDocuments, uploadFile } from './rag-files'
import { registerRagDocuments } from './rag-docs'
import { registerRagJobs } from './rag-jobs'
import { registerRagSync } from './rag-sync'

/** The server's limit per document (larger ones are counted in failed). */
const MAX_DOCUMENT_BYTES = 1024 * 1024

export function registerRag(program: Command): void {
  const rag = program.command('rag').description('Your knowledge base: ingest, search, answer')
  example(
    rag
      .command('ingest <collection> <paths...>')
      .description(
        'Ingest files and folders (.txt .md .json .html; .pdf .docx .odt .rtf .epub .pptx .odp .xlsx .ods .csv .tsv .eml .mbox extracted by the server; images named directly, by OCR) into a collection; files the server makes a job (OCR, long reads) are followed with a progress bar; exits 1 when any file failed',
      )
      .option('--no-wait', "don't wait for ingestion jobs: print their ids (follow them with `uagent rag jobs`)")
      .action(async (collection: string, paths: string[], options: { wait: boolean }, command: Command) => {
        const { documents, uploads } = collectDocuments(paths)
        const files = documents.length + uploads.length
        if (!files) throw new CliError('USAGE', 'no documents found (.txt .md .json .html .pdf .docx .odt .rtf .epub .pptx .odp .xlsx .ods .csv .tsv .eml .mbox)', EXIT.usage)
        const client = new ApiClient(globals(command))
        const total = {
          success: true,
          ingested: 0,
          unchanged: 0,
          failed: 0,
          collection,
          processingTime: 0,
          errors: [] as { id: string; message: string }[],
          ...(options.wait ? {} : { jobs: [] as { id: string; jobId: string }[] }),
        }
        const bar = progressBar(files, `Ingesting into ${collection}`)
        let done = 0
        const fail = (id: string, message: string) => {
          total.failed++
          total.errors.push({ id, message })
          bar.update(++done)
        }
        // As the server does: a document over 1 MB is counted in failed, and the rest goes on.
        const sendable: typeof documents = []
        for (const document of documents) {
          if (Buffer.byteLength(document.content) > MAX_DOCUMENT_BYTES) fail(document.id, 'content is larger than 1 MB')
          else sendable.push(document)
        }
        // A batch over the server's request size limit is split in two until it fits.
        const send = async (batch: typeof documents): Promise<void> => {
          let body
          try {
            body = await client.json('POST', '/rag/ingest', { collection, documents: batch })
          } catch (error) {
            if (!(error instanceof CliError) || error.code !== 'PAYLOAD_TOO_LARGE') throw error
            if (batch.length === 1) return fail(batch[0]!.id, `larger than the server's request size limit (${error.message})`)
            const half = Math.ceil(batch.length / 2)
            await send(batch.slice(0, half))
            return send(batch.slice(half))
          }
          total.ingested += body.ingested
          total.unchanged += body.unchanged ?? 0
          total.failed += body.failed
          total.processingTime += body.processingTime
          total.errors.push(...(body.errors ?? []))
          done += batch.length
          bar.update(done)
        }
        for (const batch of batches(sendable)) await send(batch)
        // Files that are not plain text (PDF, Word…) go one by one through the upload route, where the server extracts them.
        for (const file of uploads) {
          const started = performance.now()
          const outcome = await uploadFile(client, collection, file, undefined, options.wait)
          total.processingTime += Math.round(performance.now() - started)
          if (outcome.status === 'failed') fail(file.id, outcome.reason ?? 'failed')
          else if (outcome.status === 'queued') {
            total.jobs?.push({ id: file.id, jobId: outcome.jobId! })
            bar.update(++done)
          } else {
            if (outcome.status === 'ingested') total.ingested++
            else total.unchanged++
            bar.update(++done)
          }
        }
        bar.done()
        total.success = total.failed === 0
        emit(command, total, () => {
          const unchanged = total.unchanged ? ` (${total.unchanged} unchanged)` : ''
          console.log(`${total.ingested + total.unchanged} of ${files} documents ingested into ${collection}${unchanged} in ${total.processingTime} ms.`)
          if (total.jobs?.length) {
            console.log(`${total.jobs.length} left to ingestion jobs (follow them with \`uagent rag jobs --watch\`):`)
            for (const job of total.jobs) console.log(`  ${job.jobId}  ${job.id}`)
          }
          for (const error of total.errors) console.log(`  ${dim('failed')} ${error.id}: ${error.message}`)
        })
        if (total.failed) {
          throw new CliError('INGEST_FAILED', `${total.failed} of ${files} files failed: ${total.errors.map((e) => `${e.id} (${e.message})`).join('; ')}`, EXIT.apiError)
        }
      }),
    'uagent rag ingest docs ./handbook',
    'uagent rag ingest manuals ./pdfs',
    'uagent rag ingest scans ./scanned --no-wait',
  )
  example(
    rag
      .command('search <collection> <query...>')
      .description('Hybrid search (meaning + keywords); scores 0..1')
      .option('-n, --limit <n>', 'results (1-100)', integer, 5)
      .option('-t, --threshold <score>', 'minimum score (0-1)', decimal)
      .action(async (collection: string, words: string[], options: { limit: number; threshold?: number }, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/rag/search', {
          collection,
          query: words.join(' '),
          limit: options.limit,
          ...(options.threshold !== undefined ? { threshold: options.threshold } : {}),
        })
        emit(command, body, () => {
          console.log(table(['SCORE', 'DOCUMENT', 'CHUNK', 'TEXT'], body.results.map((r: any) => [r.score.toFixed(3), r.id, r.metadata.chunk, r.content])))
          console.log(dim(`${body.totalResults} results in ${body.searchTime} ms`))
        })
      }),
    'uagent rag search docs "how do I reset my password"',
  )
  example(
    rag
      .command('answer <collection> <question...>')
      .description('Answer a question from a collection, with cited sources')
      .option('--max-context <n>', 'passages to use (1-20)', integer, 3)
      .option('--no-context', 'leave the passages out of the response')
      .action(async (collection: string, words: string[], options: { maxContext: number; context: boolean }, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/rag/answer', {
          collection,
          question: words.join(' '),
          maxContext: options.maxContext,
          includeContext: options.context,
        })
        emit(command, body, () => {
          console.log(body.answer)
          if (body.sources.length) {
            console.log(`\n${bold('Sources')}`)
            body.sources.forEach((s: any, i: number) => console.log(`  [${i + 1}] ${s.title} ${dim(`(${s.id}, ${s.relevanceScore.toFixed(3)})`)}`))
          }
        })
      }),
    'uagent rag answer docs "How long is a reset link valid?"',
  )
  example(
    rag
      .command('create <collection>')
      .description('Create an empty collection (ingest or upload adds documents later)')
      .action(async (collection: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/rag/collections', { name: collection })
        emit(command, body, () => console.log(`Created collection ${body.collection.name} (embedder ${body.collection.embedder}).`))
      }),
    'uagent rag create handbook',
  )
  example(
    rag
      .command('collections')
      .description('List your collections')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/rag/collections')
        emit(command, body, () =>
          console.log(table(['NAME', 'DOCUMENTS', 'CHUNKS', 'EMBEDDER', 'CREATED'], body.collections.map((c: any) => [c.name, c.documents, c.chunks, c.embedder, c.createdAt.slice(0, 10)]))),
        )
      }),
    'uagent rag collections',
  )
  example(
    rag
      .command('delete <collection> [documentId]')
      .description('Delete a collection, or one document from it')
      .action(async (collection: string, documentId: string | undefined, _options, command: Command) => {
        const path = `/rag/collections/${encodeURIComponent(collection)}${documentId ? `/documents/${encodeURIComponent(documentId)}` : ''}`
        const body = await new ApiClient(globals(command)).json('DELETE', path)
        emit(command, body, () => console.log(documentId ? `Deleted ${documentId} from ${collection}.` : `Deleted collection ${collection}.`))
      }),
    'uagent rag delete docs handbook/old.md',
  )
  registerRagDocuments(rag)
  registerRagSync(rag)
  registerRagJobs(rag)
}
