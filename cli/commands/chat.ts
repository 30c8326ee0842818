import type { Command } from 'commander'
import { readEventData } from '../../src/core/sse-reader'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, keyValues, table } from '../output'
import { integer } from '../parse'
import { attachFiles } from './conversation-files'

interface ChatOptions {
  stream: boolean
  collection: string[]
  conversation?: string
  optimize?: boolean
  context?: string
  file: string[]
  assistant?: string
}

const conversationPath = (id: string, userId?: string) =>
  `/conversations/${encodeURIComponent(id)}${userId ? `?userId=${encodeURIComponent(userId)}` : ''}`

/**
 * A conversation named by its id or by a unique prefix of it (as `conversations list` shows them,
 * cut to the terminal's width). Another user's conversation is looked up in their list (admin).
 */
export async function resolveConversation(client: ApiClient, ref: string, userId?: string): Promise<string> {
  try {
    await client.json('GET', conversationPath(ref, userId))
    return ref
  } catch (error) {
    if (!(error instanceof CliError) || error.code !== 'NOT_FOUND') throw error
  }
  const prefix = ref.replace(/…$/, '')
  const matches: string[] = []
  for (let offset = 0; prefix.length > 0; offset += 100) {
    const query = new URLSearchParams({ limit: '100', offset: String(offset) })
    if (userId) query.set('userId', userId)
    const page = await client.json<{ conversations: { id: string }[]; hasMore: boolean }>('GET', `/conversations?${query}`)
    matches.push(...page.conversations.map((c) => c.id).filter((id) => id.startsWith(prefix)))
    if (!page.hasMore) break
  }
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) throw new CliError('AMBIGUOUS', `"${ref}" is the start of ${matches.length} conversations (${matches.slice(0, 5).join(', ')}${matches.length > 5 ? ', …' : ''}): give more of the id`, EXIT.usage)
  throw new CliError('NOT_FOUND', `no conversation with an id starting "${ref}" (see uagent conversations list)`, EXIT.apiError)
}

/** The passages a grounded reply cites, as `[n] title (document, page)`. */
export function printSources(sources: { id: string; title: string; page?: number; collection: string }[] | undefined) {
  if (!sources) return
  if (!sources.length) return console.error(dim('(no relevant passages found)'))
  sources.forEach((s, i) => console.error(dim(`[${i + 1}] ${s.title} (${s.collection}/${s.id}${s.page ? `, page ${s.page}` : ''})`)))
}

export function registerChat(program: Command): void {
  example(
    program
      .command('chat <message...>')
      .description('Chat with the model; the reply streams to the terminal as it is generated')
      .option('--no-stream', 'wait for the whole reply (POST /chat)')
      .option('-c, --conversation <id>', 'continue a conversation')
      .option('--optimize', 'rewrite the message into a clearer prompt first')
      .option('--context <text>', 'extra context for the model')
      .option('--collection <name>', 'ground the reply in this collection of yours (repeat for several)', (value: string, list: string[]) => [...list, value], [] as string[])
      .option('--file <path>', 'attach this file to the conversation first (repeat for several): the reply is grounded in it', (value: string, list: string[]) => [...list, value], [] as string[])
      .option('--assistant <name>', 'answer as this assistant (yours, one shared with you, or a built-in agent; see uagent assistants list)')
      .action(async (words: string[], options: ChatOptions, command: Command) => {
        const client = new ApiClient(globals(command))
        const message = words.join(' ')
        if (options.file.length) {
          // A new conversation is made first, so the files have one to go with.
          options.conversation ??= (await client.json<{ id: string }>('POST', '/conversations', {})).id
          const { files } = await attachFiles(client, options.conversation, options.file)
          for (const file of files.filter((f) => f.status === 'failed')) console.error(dim(`${file.name}: not attached (${file.reason ?? 'failed'})`))
        }
        if (!options.stream || globals(command).json) {
          const body = await client.json('POST', '/chat', {
            message,
            optimizePrompt: options.optimize === true,
            ...(options.conversation ? { conversationId: options.conversation } : {}),
            ...(options.context ? { context: options.context } : {}),
            ...(options.collection.length ? { collections: options.collection } : {}),
            ...(options.assistant ? { assistant: options.assistant } : {}),
          })
          emit(command, body, () => {
            console.log(body.response)
            printSources(body.metadata.sources)
            if (body.metadata.assistant) console.error(dim(`\n[${body.metadata.assistant.name}${body.metadata.collectionsSkipped ? ` · ${body.metadata.collectionsSkipped} of its collections not readable by you, left out` : ''}]`))
            console.error(dim(`\n[${body.metadata.model} · ${body.metadata.tokens} tokens · ${body.metadata.responseTime} ms · conversation ${body.metadata.conversationId}]`))
          })
          return
        }
        const query = new URLSearchParams({ message })
        if (options.conversation) query.set('conversationId', options.conversation)
        if (options.optimize) query.set('optimizePrompt', 'true')
        if (options.context) query.set('context', options.context)
        if (options.collection.length) query.set('collections', options.collection.join(','))
        if (options.assistant) query.set('assistant', options.assistant)
        const response = await client.fetch(`/stream?${query}`, { headers: { accept: 'text/event-stream' } })
        let failure: CliError | null = null
        for await (const data of readEventData(response.body!)) {
          const event = JSON.parse(data)
          if (event.type === 'start' && event.assistant) console.error(dim(`[${event.assistant.name}]`))
          else if (event.type === 'chunk') process.stdout.write(event.content)
          else if (event.type === 'end') {
            process.stdout.write('\n')
            printSources(event.sources)
            console.error(dim(`[${event.tokens} tokens · ${event.responseTime} ms · conversation ${event.conversationId}]`))
          } else if (event.type === 'error') failure = new CliError(event.code, event.message, EXIT.apiError)
        }
        if (failure) throw failure
      }),
    'uagent chat "What can you do?"',
    'uagent chat --conversation 4f1c… "And then?"',
    'uagent chat --collection docs "How do I enable two-factor authentication?"',
    'uagent chat --file contract.pdf "When can either party end the contract?"',
    'uagent chat --assistant "HR helper" "How many days of leave do I have?"',
  )

  const conversations = program.command('conversations').description('Your stored conversations')
  example(
    conversations
      .command('list', { isDefault: true })
      .description('List conversations, newest first')
      .option('--limit <n>', "how many (1-100; the server's default is 50)", integer)
      .option('--offset <n>', 'skip this many (default 0)', integer)
      .option('--user, --user-id <id>', 'another user (admin)')
      .action(async (options: { limit?: number; offset?: number; userId?: string }, command: Command) => {
        // Only what was given is sent, so the server's defaults apply to the rest.
        const query = new URLSearchParams()
        if (options.limit !== undefined) query.set('limit', String(options.limit))
        if (options.offset !== undefined) query.set('offset', String(options.offset))
        if (options.userId) query.set('userId', options.userId)
        const body = await new ApiClient(globals(command)).json('GET', query.size ? `/conversations?${query}` : '/conversations')
        emit(command, body, () => {
          console.log(
            table(
              ['ID', 'UPDATED', 'MESSAGES', 'TITLE'],
              body.conversations.map((c: any) => [c.id, c.updatedAt.slice(0, 19).replace('T', ' '), c.messages.length, c.title]),
            ),
          )
          console.log(dim(`${body.conversations.length} of ${body.total}${body.hasMore ? ' (more with --offset)' : ''}`))
        })
      }),
    'uagent conversations list --limit 10',
  )
  example(
    conversations
      .command('show <id>')
      .description('Show a conversation with its messages (the id, or a unique start of it)')
      .option('--user, --user-id <id>', "another user's (admin)")
      .action(async (ref: string, options: { userId?: string }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref, options.userId)
        const body = await client.json('GET', conversationPath(id, options.userId))
        emit(command, body, () => {
          console.log(keyValues([['id', body.id], ['title', body.title], ['created', body.createdAt], ['updated', body.updatedAt]]))
          for (const m of body.messages) console.log(`\n${dim(`${m.role} · ${m.timestamp}`)}\n${m.content}`)
        })
      }),
    'uagent conversations show 4f1c',
  )
  example(
    conversations
      .command('delete <id>')
      .description('Delete a conversation (the id, or a unique start of it)')
      .option('--user, --user-id <id>', "another user's (admin)")
      .action(async (ref: string, options: { userId?: string }, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await resolveConversation(client, ref, options.userId)
        const body = await client.json('DELETE', conversationPath(id, options.userId))
        emit(command, body, () => console.log(`Deleted conversation ${id}.`))
      }),
    'uagent conversations delete 4f1c…',
  )
}
