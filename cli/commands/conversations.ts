import { writeFileSync } from 'node:fs'
import type { Command } from 'commander'
import { readEventData } from '../../src/core/sse-reader'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, keyValues, table } from '../output'
import { integer } from '../parse'
import { printSources, resolveConversation } from './chat'
import { asInput, matches, printAccess, principalOf, type Share, type Target } from './rag-access'
import { attachFiles, type ConversationFile } from './conversation-files'

const path = (id: string, rest = '') => `/conversations/${encodeURIComponent(id)}${rest}`

function filesTable(files: ConversationFile[]): string {
  return table(['ID', 'STATUS', 'CHUNKS', 'BYTES', 'REASON'], files.map((f) => [f.id, f.status, f.chunks ?? '-', f.bytes ?? '-', f.reason ?? '']))
}

/** Prints a reply: streamed from server-sent events, or the ChatResponse. */
async function printReply(command: Command, response: Response): Promise<void> {
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const body = await response.json()
    emit(command, body, () => {
      console.log(body.response)
      printSources(body.metadata.sources)
      console.error(dim(`\n[${body.metadata.model} · ${body.metadata.tokens} tokens · reply ${body.metadata.replyId}]`))
    })
    return
  }
  let failure: CliError | null = null
  for await (const data of readEventData(response.body!)) {
    const event = JSON.parse(data)
    if (event.type === 'chunk') process.stdout.write(event.content)
    else if (event.type === 'end') {
      process.stdout.write('\n')
      printSources(event.sources)
      console.error(dim(`[${event.tokens} tokens · ${event.responseTime} ms]`))
    } else if (event.type === 'error') failure = new CliError(event.code, event.message, EXIT.apiError)
  }
  if (failure) throw failure
}

/** `uagent conversations search|new|regenerate|edit|rate|ratings|export|files|attach|detach`: chat for every day (docs/chat.md). */
export function registerConversations(program: Command): void {
  const conversations = program.commands.find((c) => c.name() === 'conversations')!
  const streamed = (command: Command, stream: boolean) => stream && !globals(command).json

  example(
    conversations
      .command('search <words...>')
      .description('Find your conversations (and those shared with you) by words of their title or messages, newest first')
      .option('--limit <n>', 'how many (1-100, default 20)', integer)
      .option('--offset <n>', 'skip this many (default 0)', integer)
      .action(async (words: string[], options: { limit?: number; offset?: number }, command: Command) => {
        const query = new URLSearchParams({ q: words.join(' '), limit: String(options.limit ?? 20) })
        if (options.offset !== undefined) query.set('offset', String(options.offset))
        const body = await new ApiClient(globals(command)).json('GET', `/conversations?${query}`)
        emit(command, body, () => {
          console.log(
            table(
              ['ID', 'UPDATED', 'TITLE', 'MATCH'],
              body.conversations.map((c: any) => [c.id, c.updatedAt.slice(0, 19).replace('T', ' '), `${c.title}${c.access === 'viewer' ? ` (shared by ${c.owner?.email})` : ''}`, c.match]),
            ),
          )
          console.log(dim(`${body.conversations.length} of ${body.total}${body.hasMore ? ' (more with --offset)' : ''}`))
        })
      }),
    'uagent conversations search deploy window',
  )
  example(
    conversations
      .command('new')
      .description('Make an empty conversation (to attach files before the first message)')
      .option('--title <title>', 'its title (default: named by its first message)')
      .action(async (options: { title?: string }, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/conversations', options.title ? { title: options.title } : {})
        emit(command, body, () => console.log(body.id))
      }),
    'uagent conversations new --title "Contract review"',
  )
  example(
    conversations
      .command('regenerate <id>')
      .description('A new reply replacing the last one (streams unless --no-stream)')
      .option('--no-stream', 'wait for the whole reply')
      .option('--collection <name>', 'ground it in this collection (repeat for several; default: those of the replaced reply)', (value: string, list: string[]) => [...list, value], [] as string[])
      .action(async (ref: string, options: { stream: boolean; collection: string[] }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const response = await client.fetch(path(id, '/regenerate'), {
          method: 'POST',
          headers: streamed(command, options.stream) ? { accept: 'text/event-stream' } : {},
          body: JSON.stringify(options.collection.length ? { collections: options.collection } : {}),
        })
        await printReply(command, response)
      }),
    'uagent conversations regenerate 4f1c',
  )
  example(
    conversations
      .command('edit <id> <messageId> <content...>')
      .description('Replace one of your messages, drop what followed it and get a new reply (streams unless --no-stream)')
      .option('--no-stream', 'wait for the whole reply')
      .action(async (ref: string, messageId: string, content: string[], options: { stream: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const response = await client.fetch(path(id, `/messages/${encodeURIComponent(messageId)}`), {
          method: 'PATCH',
          headers: streamed(command, options.stream) ? { accept: 'text/event-stream' } : {},
          body: JSON.stringify({ content: content.join(' ') }),
        })
        await printReply(command, response)
      }),
    'uagent conversations edit 4f1c 9b2e… "When is the deploy window on Thursday?"',
  )
  example(
    conversations
      .command('rate <id> <messageId> <rating>')
      .description('Rate a reply up or down (one rating per reply; a second replaces the first)')
      .option('--note <text>', 'why')
      .action(async (ref: string, messageId: string, rating: string, options: { note?: string }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await client.json('POST', path(id, `/messages/${encodeURIComponent(messageId)}/feedback`), { rating, ...(options.note ? { note: options.note } : {}) })
        emit(command, body, () => console.log(`Rated ${body.messageId} ${body.rating} (${body.model})`))
      }),
    'uagent conversations rate 4f1c 9b2e… up --note "exactly right"',
  )
  example(
    conversations
      .command('ratings <id>')
      .description('Your ratings of the replies of a conversation')
      .action(async (ref: string, _options: unknown, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await client.json('GET', path(id, '/feedback'))
        emit(command, body, () => console.log(table(['MESSAGE', 'RATING', 'NOTE'], Object.entries(body.ratings).map(([m, r]: [string, any]) => [m, r.rating, r.note ?? '']))))
      }),
    'uagent conversations ratings 4f1c',
  )
  example(
    conversations
      .command('export <id>')
      .description('Download a conversation as Markdown (sources as footnotes) or JSON, to a file or standard output')
      .option('-f, --format <format>', 'markdown or json', 'markdown')
      .option('-o, --output <file>', 'file to write (default: standard output)')
      .action(async (ref: string, options: { format: string; output?: string }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const response = await client.fetch(path(id, `/export?format=${encodeURIComponent(options.format)}`))
        const text = await response.text()
        if (!options.output) {
          process.stdout.write(text)
          return
        }
        writeFileSync(options.output, text)
        const summary = { file: options.output, format: options.format, bytes: Buffer.byteLength(text) }
        emit(command, summary, () => console.log(`Wrote ${summary.bytes.toLocaleString('en-US')} bytes (${options.format}) to ${options.output}`))
      }),
    'uagent conversations export 4f1c -o deploy.md',
    'uagent conversations export 4f1c --format json > deploy.json',
  )
  example(
    conversations
      .command('files <id>')
      .description("A conversation's files and their state (ready, queued, running, failed)")
      .action(async (ref: string, _options: unknown, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await client.json('GET', path(id, '/files'))
        emit(command, body, () => console.log(body.files.length ? filesTable(body.files) : dim('No files.')))
      }),
    'uagent conversations files 4f1c',
  )
  example(
    conversations
      .command('attach <id> <files...>')
      .description('Attach files to a conversation: its later replies are grounded in them (waits for slow ones unless --no-wait)')
      .option('--no-wait', 'do not wait for a job (prints its id)')
      .action(async (ref: string, paths: string[], options: { wait: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await attachFiles(client, id, paths, options.wait)
        emit(command, body, () => {
          console.log(filesTable(body.files))
          if (body.jobId && !options.wait) console.log(dim(`job ${body.jobId} (uagent rag jobs show ${body.jobId})`))
        })
        if (body.files.some((file) => file.status === 'failed')) process.exitCode = EXIT.apiError
      }),
    'uagent conversations attach 4f1c contract.pdf annex.docx',
  )
  example(
    conversations
      .command('detach <id> <fileId>')
      .description('Remove a file from a conversation')
      .action(async (ref: string, fileId: string, _options: unknown, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await client.json('DELETE', path(id, `/files/${encodeURIComponent(fileId)}`))
        emit(command, body, () => console.log(keyValues([['removed', body.id]])))
      }),
    'uagent conversations detach 4f1c contract.pdf',
  )
  example(
    conversations
      .command('access <id>')
      .description('Who may read a conversation of yours: its access list')
      .action(async (ref: string, _options: unknown, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const body = await client.json('GET', path(id, '/access'))
        emit(command, body, () => printAccess(body))
      }),
    'uagent conversations access 4f1c',
  )
  example(
    conversations
      .command('share <id>')
      .description('Let a group, a user or everyone read a conversation of yours (viewer: read, export, rate; never post)')
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'every user of this server')
      .action(async (ref: string, options: Target, command: Command) => {
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const current = await client.json('GET', path(id, '/access'))
        const kept = (current.shares as Share[]).filter((share) => !matches(share, principal)).map(asInput)
        const body = await client.json('PUT', path(id, '/access'), { shares: [...kept, { type: principal.type, ...principal.input, role: 'viewer' }] })
        emit(command, body, () => {
          console.log(`Shared ${id} with ${principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`} to read (link: /app/c/${id}).`)
          printAccess(body)
        })
      }),
    'uagent conversations share 4f1c --user bob@example.com',
    'uagent conversations share 4f1c --group staff',
  )
  example(
    conversations
      .command('unshare <id>')
      .description("Remove a group's, a user's or everyone's access to a conversation of yours (from their next request)")
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'the entry for every user')
      .action(async (ref: string, options: Target, command: Command) => {
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref)
        const current = await client.json('GET', path(id, '/access'))
        const shares = current.shares as Share[]
        const kept = shares.filter((share) => !matches(share, principal))
        const who = principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`
        if (kept.length === shares.length) {
          emit(command, current, () => console.log(`${id} was not shared with ${who}: nothing changed.`))
          return
        }
        const body = await client.json('PUT', path(id, '/access'), { shares: kept.map(asInput) })
        emit(command, body, () => {
          console.log(`${who} can no longer read ${id} (from their next request).`)
          printAccess(body)
        })
      }),
    'uagent conversations unshare 4f1c --user bob@example.com',
  )
}
