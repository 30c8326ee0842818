import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, keyValues, table } from '../output'
import { asInput, matches, principalOf, printAccess, ROLES, type Share, type Target } from './rag-access'

interface Assistant {
  id: string
  name: string
  description: string
  instructions: string
  collections: { id: string; name: string; owner: { email: string } }[]
  collectionsHidden: number
  tools: string[]
  model: string | null
  temperature: number | null
  starters: string[]
  owner: { id: string; email: string }
  access: string
  builtin: boolean
  createdAt: string
  updatedAt: string
}

interface EditOptions {
  name?: string
  description?: string
  instructions?: string
  instructionsFile?: string
  collection?: string[]
  tool?: string[]
  model?: string
  temperature?: string
  starter?: string[]
}

const path = (ref: string, rest = '') => `/assistants/${encodeURIComponent(ref)}${rest}`
const repeat = (value: string, list: string[] = []) => [...list, value]

/** The body of a create or an edit: only what was given (an edit changes those fields alone). */
function bodyOf(options: EditOptions): Record<string, unknown> {
  if (options.instructions !== undefined && options.instructionsFile !== undefined) throw new CliError('USAGE', 'Give --instructions or --instructions-file, not both', EXIT.usage)
  const body: Record<string, unknown> = {}
  if (options.name !== undefined) body.name = options.name
  if (options.description !== undefined) body.description = options.description
  if (options.instructions !== undefined) body.instructions = options.instructions
  if (options.instructionsFile !== undefined) body.instructions = readFileSync(options.instructionsFile === '-' ? 0 : options.instructionsFile, 'utf8')
  if (options.collection) body.collections = options.collection.filter(Boolean)
  if (options.tool) body.tools = options.tool.filter(Boolean)
  if (options.model !== undefined) body.model = options.model === '' ? null : options.model
  if (options.temperature !== undefined) {
    const temperature = options.temperature === '' ? null : Number(options.temperature)
    if (temperature !== null && !(temperature >= 0 && temperature <= 2)) throw new CliError('USAGE', '--temperature must be a number from 0 to 2', EXIT.usage)
    body.temperature = temperature
  }
  if (options.starter) body.starters = options.starter.filter(Boolean)
  return body
}

const qualified = (a: Assistant) => (a.builtin ? a.name : a.access === 'owner' ? a.name : `${a.owner.email}/${a.name}`)

function show(a: Assistant): void {
  console.log(
    keyValues([
      ['Name', a.builtin ? `${a.name} ${dim('(built-in agent, read-only)')}` : a.name],
      ['Id', a.id],
      ['Owner', a.owner.email],
      ['Access', a.access],
      ['Description', a.description || dim('—')],
      ['Collections', [...a.collections.map((c) => `${c.owner.email}/${c.name}`), ...(a.collectionsHidden ? [dim(`${a.collectionsHidden} you cannot read`)] : [])].join(', ') || dim('—')],
      ['Tools', a.tools.join(', ') || dim('—')],
      ['Model', a.model ?? dim('server default')],
      ['Temperature', a.temperature ?? dim('model default')],
      ['Starters', a.starters.join(' | ') || dim('—')],
    ]),
  )
  if (a.instructions) console.log(`\n${a.instructions}`)
}

const editOptions = (command: Command) =>
  command
    .option('--description <text>', 'what it is for')
    .option('--instructions <text>', 'its system prompt (at most 20,000 characters)')
    .option('--instructions-file <file>', 'read the system prompt from a file (- for stdin)')
    .option('--collection <ref>', 'a collection it answers from (repeat; an edit replaces the list)', repeat)
    .option('--tool <name>', 'a tool it may use, <plugin>__<action> (repeat; an edit replaces the list)', repeat)
    .option('--model <id>', 'a chat model this server serves ("" for the default)')
    .option('--temperature <t>', '0..2 ("" for the model default)')
    .option('--starter <text>', 'a suggested first message (repeat; an edit replaces the list)', repeat)

/** `uagent assistants list|show|create|edit|delete|share|unshare|access`. */
export function registerAssistants(program: Command): void {
  const assistants = program.command('assistants').description('Assistants: shared presets of instructions, collections, tools and model (see docs/assistants.md)')
  example(
    assistants
      .command('list')
      .description('Your assistants, those shared with you, and the built-in agents')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json<{ assistants: Assistant[] }>('GET', '/assistants')
        emit(command, body, () =>
          console.log(table(['NAME', 'OWNER', 'ACCESS', 'COLLECTIONS', 'DESCRIPTION'], body.assistants.map((a) => [qualified(a), a.builtin ? 'built-in' : a.owner.email, a.access, a.collections.length + a.collectionsHidden, a.description]))),
        )
      }),
    'uagent assistants list',
  )
  example(
    assistants
      .command('show <assistant>')
      .description('One assistant: its instructions, collections, tools, model and starters')
      .action(async (ref: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json<Assistant>('GET', path(ref))
        emit(command, body, () => show(body))
      }),
    'uagent assistants show "HR helper"',
    'uagent assistants show "alice@example.com/HR helper"',
  )
  example(
    editOptions(assistants.command('create <name>').description('Make an assistant')).action(async (name: string, options: EditOptions, command: Command) => {
      const body = await new ApiClient(globals(command)).json<Assistant>('POST', '/assistants', { ...bodyOf(options), name })
      emit(command, body, () => {
        console.log(`Made assistant ${body.name} (${body.id}).`)
        show(body)
      })
    }),
    'uagent assistants create "HR helper" --collection handbook --instructions-file hr-prompt.txt --starter "How many days of leave do I have?"',
  )
  example(
    editOptions(assistants.command('edit <assistant>').description('Change an assistant (its owner, an editor, a manager)').option('--name <name>', 'a new name')).action(
      async (ref: string, options: EditOptions, command: Command) => {
        const changes = bodyOf(options)
        if (!Object.keys(changes).length) throw new CliError('USAGE', 'Nothing to change: give at least one option (see uagent assistants edit --help)', EXIT.usage)
        const body = await new ApiClient(globals(command)).json<Assistant>('PATCH', path(ref), changes)
        emit(command, body, () => {
          console.log(`Changed assistant ${body.name}.`)
          show(body)
        })
      },
    ),
    'uagent assistants edit "HR helper" --temperature 0.2',
  )
  example(
    assistants
      .command('delete <assistant>')
      .description('Delete an assistant (its owner, a manager, an admin)')
      .action(async (ref: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('DELETE', path(ref))
        emit(command, body, () => console.log(`Deleted assistant ${ref}.`))
      }),
    'uagent assistants delete "HR helper"',
  )
  example(
    assistants
      .command('access <assistant>')
      .description('Who may use an assistant: its owner and access list')
      .action(async (ref: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', path(ref, '/access'))
        emit(command, body, () => printAccess(body))
      }),
    'uagent assistants access "HR helper"',
  )
  example(
    assistants
      .command('share <assistant>')
      .description("Give a group, a user or everyone a role on an assistant; --collections also gives them viewer on its collections you manage")
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'every user of this server')
      .requiredOption('--role <role>', `${ROLES.join(', ')}`)
      .option('--collections', "also share the assistant's collections (viewer) with everyone it is shared with")
      .action(async (ref: string, options: Target & { role: string; collections?: boolean }, command: Command) => {
        if (!ROLES.includes(options.role)) throw new CliError('USAGE', `--role must be one of ${ROLES.join(', ')}`, EXIT.usage)
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const current = await client.json('GET', path(ref, '/access'))
        const kept = (current.shares as Share[]).filter((share) => !matches(share, principal)).map(asInput)
        const body = await client.json('PUT', path(ref, '/access'), {
          shares: [...kept, { type: principal.type, ...principal.input, role: options.role }],
          ...(options.collections ? { shareCollections: true } : {}),
        })
        emit(command, body, () => {
          console.log(`Shared ${ref} with ${principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`} as ${options.role}.`)
          if (body.collectionsShared?.length) console.log(`Its collections shared too: ${body.collectionsShared.join(', ')}`)
          printAccess(body)
        })
      }),
    'uagent assistants share "HR helper" --group staff --role viewer --collections',
  )
  example(
    assistants
      .command('unshare <assistant>')
      .description("Remove a group's, a user's or everyone's entry from an assistant's access list (its collections' lists are left as they are)")
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'the entry for every user')
      .action(async (ref: string, options: Target, command: Command) => {
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const current = await client.json('GET', path(ref, '/access'))
        const shares = current.shares as Share[]
        const kept = shares.filter((share) => !matches(share, principal))
        const who = principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`
        if (kept.length === shares.length) {
          emit(command, current, () => console.log(`${ref} was not shared with ${who}: nothing changed.`))
          return
        }
        const body = await client.json('PUT', path(ref, '/access'), { shares: kept.map(asInput) })
        emit(command, body, () => {
          console.log(`${who} no longer has access to ${ref} (from their next request).`)
          printAccess(body)
        })
      }),
    'uagent assistants unshare "HR helper" --group staff',
  )
}
