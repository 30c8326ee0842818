import { statSync, watch } from 'node:fs'
import { resolve } from 'node:path'
import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, progressBar } from '../output'
import { integer } from '../parse'
import { uploadFile } from './rag-files'
import { type HashCache, inPool, type LocalFile, normalizePrefix, planSync, remoteDocuments, scanFolder, type ScanOptions } from './rag-sync-scan'

interface SyncOptions {
  include: string[]
  exclude: string[]
  prefix?: string
  delete?: boolean
  dryRun?: boolean
  concurrency: number
  watch?: boolean
  /** false (--no-wait): files the server makes jobs are not waited for. */
  wait: boolean
}

/** The summary `--json` prints, exactly. */
export interface SyncSummary {
  added: string[]
  changed: string[]
  unchanged: number
  removed: string[]
  failed: { id: string; reason: string }[]
  /** With --no-wait: files left to ingestion jobs (OCR, long reads), not waited for. */
  jobs?: { id: string; jobId: string }[]
}

const collect = (value: string, list: string[]) => [...list, value]
const documentPath = (collection: string, id: string) => `/rag/collections/${encodeURIComponent(collection)}/documents/${encodeURIComponent(id)}`

/** Runs a request again after the wait a 429 asks for (a large sync meets the per-user rate limit). */
async function patiently<T>(request: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await request()
    } catch (error) {
      if (!(error instanceof CliError && error.code === 'RATE_LIMITED')) throw error
      await Bun.sleep(Math.max(1, error.retryAfter ?? 1) * 1000)
    }
  }
}

/** Sends one file; where it lands in the summary. */
async function send(client: ApiClient, collection: string, file: LocalFile, isNew: boolean, summary: SyncSummary, wait = true): Promise<'added' | 'changed' | 'unchanged' | 'failed' | 'queued'> {
  const outcome = await patiently(() => uploadFile(client, collection, { id: file.id, path: file.path }, file.path, wait))
  if (outcome.status === 'queued') {
    ;(summary.jobs ??= []).push({ id: file.id, jobId: outcome.jobId! })
    return 'queued'
  }
  if (outcome.status === 'failed') {
    summary.failed.push({ id: file.id, reason: outcome.reason ?? 'failed' })
    return 'failed'
  }
  if (outcome.status === 'unchanged') {
    summary.unchanged++
    return 'unchanged'
  }
  ;(isNew ? summary.added : summary.changed).push(file.id)
  return isNew ? 'added' : 'changed'
}

async function remove(client: ApiClient, collection: string, id: string): Promise<void> {
  try {
    await patiently(() => client.json('DELETE', documentPath(collection, id)))
  } catch (error) {
    // Already gone (another sync, a delete by hand): what was asked for is true.
    if (!(error instanceof CliError && error.code === 'NOT_FOUND')) throw error
  }
}

/** One pass: scan, compare with the collection, send what is new or changed, remove what is gone (with --delete). */
async function syncOnce(client: ApiClient, collection: string, dir: string, scan: ScanOptions, options: SyncOptions, cache: HashCache) {
  const local = scanFolder(dir, scan, cache)
  const remote = await remoteDocuments(client, collection, scan.prefix)
  const plan = planSync(local, remote, options.delete === true)
  const summary: SyncSummary = { added: [], changed: [], unchanged: plan.unchanged, removed: [], failed: [] }
  if (options.dryRun) {
    return { local, plan, summary: { ...summary, added: plan.add.map((f) => f.id), changed: plan.change.map((f) => f.id), removed: plan.remove } }
  }
  const work = [...plan.add.map((file) => ({ file, isNew: true })), ...plan.change.map((file) => ({ file, isNew: false }))]
  const bar = progressBar(work.length + plan.remove.length, `Syncing ${dir} into ${collection}`)
  let done = 0
  await inPool(work, options.concurrency, async ({ file, isNew }) => {
    await send(client, collection, file, isNew, summary, options.wait)
    bar.update(++done)
  })
  await inPool(plan.remove, options.concurrency, async (id) => {
    await remove(client, collection, id)
    summary.removed.push(id)
    bar.update(++done)
  })
  bar.done()
  summary.added.sort()
  summary.changed.sort()
  summary.removed.sort()
  summary.failed.sort((a, b) => (a.id < b.id ? -1 : 1))
  summary.jobs?.sort((a, b) => (a.id < b.id ? -1 : 1))
  return { local, plan, summary }
}

/**
 * Watches the folder after the first pass: a burst of file events is one update (debounced), which
 * rescans (rehashing only files whose size or time changed) and applies the difference with what
 * was synced — a rename is the old id removed and the new one added — one line per change, until
 * Ctrl-C.
 */
async function watchFolder(client: ApiClient, collection: string, dir: string, scan: ScanOptions, options: SyncOptions, cache: HashCache, synced: Map<string, string>) {
  let timer: ReturnType<typeof setTimeout> | null = null
  let running: Promise<void> = Promise.resolve()
  let again = false
  const update = async () => {
    const local = scanFolder(dir, scan, cache)
    const summary: SyncSummary = { added: [], changed: [], unchanged: 0, removed: [], failed: [] }
    const work = [...local.values()].filter((file) => synced.get(file.id) !== file.hash)
    await inPool(work, options.concurrency, async (file) => {
      const result = await send(client, collection, file, !synced.has(file.id), summary)
      if (result === 'failed') console.log(`failed  ${file.id}: ${summary.failed.find((f) => f.id === file.id)?.reason}`)
      else {
        synced.set(file.id, file.hash)
        if (result !== 'unchanged') console.log(`${result.padEnd(7)} ${file.id}`)
      }
    })
    const gone = [...synced.keys()].filter((id) => !local.has(id))
    await inPool(gone, options.concurrency, async (id) => {
      await remove(client, collection, id)
      synced.delete(id)
      console.log(`removed ${id}`)
    })
  }
  const schedule = () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => {
      timer = null
      // One update at a time; events during one make another after it.
      running = running.then(async () => {
        do {
          again = false
          try {
            await update()
          } catch (error) {
            console.error(`${dim('error')} ${(error as Error).message}`)
          }
        } while (again)
      })
    }, 300)
  }
  const watcher = watch(dir, { recursive: true }, () => {
    again = true
    schedule()
  })
  // Anything that changed between the first pass and the watch starting is caught by one rescan now.
  again = true
  schedule()
  console.error(dim(`Watching ${dir} (Ctrl-C to stop)`))
  await new Promise<void>((done) => {
    const stop = () => {
      watcher.close()
      if (timer) clearTimeout(timer)
      running.then(done)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}

export function registerRagSync(rag: Command): void {
  example(
    rag
      .command('sync <collection> <dir>')
      .description('Keep a collection in step with a folder: send new and changed files (by SHA-256), optionally remove documents whose file is gone')
      .option('--include <glob>', 'only files matching (repeat for several)', collect, [] as string[])
      .option('--exclude <glob>', 'skip files matching (repeat for several)', collect, [] as string[])
      .option('--prefix <prefix>', 'document ids start with this (keeps several folders apart in one collection)')
      .option('--delete', 'remove documents (under the prefix) whose file is gone')
      .option('--dry-run', 'print the plan and change nothing')
      .option('-j, --concurrency <n>', 'files sent at a time (1-32)', integer, 4)
      .option('--watch', 'after the first pass, keep watching the folder and apply each change')
      .option('--no-wait', "don't wait for files the server makes ingestion jobs (OCR, long reads): print their job ids")
      .action(async (collection: string, dirArgument: string, options: SyncOptions, command: Command) => {
        const dir = resolve(dirArgument)
        try {
          if (!statSync(dir).isDirectory()) throw new Error()
        } catch {
          throw new CliError('USAGE', `not a folder: ${dirArgument}`, EXIT.usage)
        }
        if (options.concurrency < 1 || options.concurrency > 32) throw new CliError('USAGE', '--concurrency: expected 1 to 32', EXIT.usage)
        const client = new ApiClient(globals(command))
        const scan: ScanOptions = { include: options.include, exclude: options.exclude, prefix: normalizePrefix(options.prefix) }
        const cache: HashCache = new Map()
        const { local, plan, summary } = await syncOnce(client, collection, dir, scan, options, cache)
        emit(command, summary, () => {
          if (options.dryRun) {
            for (const file of plan.add) console.log(`would add    ${file.id}`)
            for (const file of plan.change) console.log(`would change ${file.id}`)
            for (const id of plan.remove) console.log(`would remove ${id}`)
          }
          const counts = `${summary.added.length} added, ${summary.changed.length} changed, ${summary.unchanged} unchanged, ${summary.removed.length} removed, ${summary.failed.length} failed`
          console.log(`${options.dryRun ? 'Dry run (nothing changed): ' : ''}${counts} — ${dir} → ${collection}${scan.prefix ? ` (prefix ${scan.prefix})` : ''}`)
          for (const failure of summary.failed) console.log(`  ${dim('failed')} ${failure.id}: ${failure.reason}`)
          if (summary.jobs?.length) {
            console.log(`${summary.jobs.length} left to ingestion jobs (follow them with \`uagent rag jobs --watch\`):`)
            for (const job of summary.jobs) console.log(`  ${job.jobId}  ${job.id}`)
          }
        })
        if (options.watch && !options.dryRun) {
          const synced = new Map([...local.values()].filter((file) => !summary.failed.some((f) => f.id === file.id)).map((file) => [file.id, file.hash]))
          await watchFolder(client, collection, dir, scan, options, cache, synced)
          return
        }
        if (summary.failed.length) {
          throw new CliError('SYNC_FAILED', `${summary.failed.length} files failed: ${summary.failed.map((f) => `${f.id} (${f.reason})`).join('; ')}`, EXIT.apiError)
        }
      }),
    'uagent rag sync notes ~/notes --delete',
    'uagent rag sync docs ./repo/docs --prefix repo --exclude "*.draft.md" --watch',
  )
}
