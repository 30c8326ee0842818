import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { emit, example, globals, table } from '../output'

export const ROLES = ['viewer', 'editor', 'manager']
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface Share {
  type: 'user' | 'group' | 'everyone'
  id?: string
  email?: string
  name?: string
  role: string
}

export interface Target {
  group?: string
  user?: string
  everyone?: boolean
}

const accessPath = (collection: string) => `/rag/collections/${encodeURIComponent(collection)}/access`

/** The one principal a share or unshare names (exactly one of --group, --user, --everyone). */
export function principalOf(options: Target): { type: Share['type']; key: string; input: Record<string, string> } {
  const given = [options.group !== undefined, options.user !== undefined, options.everyone === true].filter(Boolean).length
  if (given !== 1) throw new CliError('USAGE', 'Name exactly one of --group NAME, --user EMAIL or --everyone', EXIT.usage)
  if (options.everyone) return { type: 'everyone', key: 'everyone', input: {} }
  if (options.group !== undefined) {
    const group = options.group.trim()
    return { type: 'group', key: group, input: UUID.test(group) ? { groupId: group } : { name: group } }
  }
  const user = options.user!.trim()
  return { type: 'user', key: user.toLowerCase(), input: user.includes('@') ? { email: user.toLowerCase() } : { userId: user } }
}

/** Whether an entry of the list is the principal named. */
export const matches = (share: Share, principal: ReturnType<typeof principalOf>) =>
  share.type === principal.type && (principal.type === 'everyone' || share.id === principal.key || share.email === principal.key || share.name === principal.key)

/** An entry as `PUT …/access` takes it back. */
export const asInput = (share: Share) =>
  share.type === 'everyone' ? { type: share.type, role: share.role } : share.type === 'user' ? { type: share.type, userId: share.id, role: share.role } : { type: share.type, groupId: share.id, role: share.role }

export function printAccess(body: { owner: { email: string }; shares: Share[] }): void {
  console.log(`Owner: ${body.owner.email}`)
  if (!body.shares.length) {
    console.log('Shared with nobody.')
    return
  }
  console.log(table(['TYPE', 'WHO', 'ROLE'], body.shares.map((s) => [s.type, s.type === 'everyone' ? 'everyone' : (s.email ?? s.name ?? s.id ?? ''), s.role])))
}

/** `uagent rag share|unshare|access`: a collection's access list. */
export function registerRagAccess(rag: Command): void {
  example(
    rag
      .command('access <collection>')
      .description("Who may use a collection: its owner and access list (the owner, a manager or an admin)")
      .action(async (collection: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', accessPath(collection))
        emit(command, body, () => printAccess(body))
      }),
    'uagent rag access handbook',
    'uagent rag access alice@example.com/handbook',
  )
  example(
    rag
      .command('share <collection>')
      .description('Give a group, a user or everyone a role on a collection (replacing the role they had)')
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'every user of this server')
      .requiredOption('--role <role>', `${ROLES.join(', ')}`)
      .action(async (collection: string, options: Target & { role: string }, command: Command) => {
        if (!ROLES.includes(options.role)) throw new CliError('USAGE', `--role must be one of ${ROLES.join(', ')}`, EXIT.usage)
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const current = await client.json('GET', accessPath(collection))
        const kept = (current.shares as Share[]).filter((share) => !matches(share, principal)).map(asInput)
        const body = await client.json('PUT', accessPath(collection), { shares: [...kept, { type: principal.type, ...principal.input, role: options.role }] })
        emit(command, body, () => {
          console.log(`Shared ${collection} with ${principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`} as ${options.role}.`)
          printAccess(body)
        })
      }),
    'uagent rag share handbook --group staff --role viewer',
    'uagent rag share handbook --user bob@example.com --role editor',
  )
  example(
    rag
      .command('unshare <collection>')
      .description("Remove a group's, a user's or everyone's entry from a collection's access list")
      .option('--group <name>', 'a group, by name or id')
      .option('--user <email>', 'a user, by email or id')
      .option('--everyone', 'the entry for every user')
      .action(async (collection: string, options: Target, command: Command) => {
        const principal = principalOf(options)
        const client = new ApiClient(globals(command))
        const current = await client.json('GET', accessPath(collection))
        const shares = current.shares as Share[]
        const kept = shares.filter((share) => !matches(share, principal))
        const who = principal.type === 'everyone' ? 'everyone' : `${principal.type} ${principal.key}`
        if (kept.length === shares.length) {
          emit(command, current, () => console.log(`${collection} was not shared with ${who}: nothing changed.`))
          return
        }
        const body = await client.json('PUT', accessPath(collection), { shares: kept.map(asInput) })
        emit(command, body, () => {
          console.log(`${who} no longer has access to ${collection} (from their next request).`)
          printAccess(body)
        })
      }),
    'uagent rag unshare handbook --group staff',
  )
}
