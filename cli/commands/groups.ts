import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, keyValues, table } from '../output'

interface Group {
  id: string
  name: string
  description: string
  source: string
  members: number
  createdAt: string
}

interface GroupDetail extends Omit<Group, 'members'> {
  members: { id: string; email: string; addedAt: string }[]
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A group named by id or by exact name (among the groups the caller sees). */
async function resolveGroup(client: ApiClient, ref: string): Promise<Group> {
  const { groups } = await client.json<{ groups: Group[] }>('GET', '/groups')
  const found = groups.find((group) => group.id === ref) ?? groups.find((group) => group.name === ref)
  if (found) return found
  throw new CliError('NOT_FOUND', `no group with id or name "${ref}" (see uagent groups list)`, EXIT.apiError)
}

/** The id of a group reference without a look-up when it already is one. */
const groupId = async (client: ApiClient, ref: string) => (UUID.test(ref) ? ref : (await resolveGroup(client, ref)).id)

/** `{ email }` for an email, `{ userId }` otherwise. */
const member = (ref: string) => (ref.includes('@') ? { email: ref.trim() } : { userId: ref.trim() })

function showGroup(group: GroupDetail): void {
  console.log(keyValues([['Name', group.name], ['Id', group.id], ['Source', group.source], ['Description', group.description || dim('—')]]))
  if (!group.members.length) return console.log(dim('No members. Add some with: uagent groups add GROUP EMAIL'))
  console.log(table(['MEMBER', 'ID', 'ADDED'], group.members.map((m) => [m.email, m.id, m.addedAt.slice(0, 10)])))
}

export function registerGroups(program: Command): void {
  const groups = program.command('groups').description('Groups of users (admins manage them; collections are shared with groups)')
  example(
    groups
      .command('list')
      .description('Every group (admin), or the groups you are in')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/groups')
        emit(command, body, () => {
          if (!body.groups.length) return console.log(dim('No groups.'))
          console.log(table(['NAME', 'MEMBERS', 'SOURCE', 'DESCRIPTION', 'ID'], body.groups.map((g: Group) => [g.name, g.members, g.source, g.description, g.id])))
        })
      }),
    'uagent groups list',
  )
  example(
    groups
      .command('show <group>')
      .description('A group (name or id) with its members')
      .action(async (ref: string, _options, command: Command) => {
        const client = new ApiClient(globals(command))
        const body = await client.json<GroupDetail>('GET', `/groups/${encodeURIComponent(await groupId(client, ref))}`)
        emit(command, body, () => showGroup(body))
      }),
    'uagent groups show Engineering',
  )
  example(
    groups
      .command('create <name>')
      .description('Create a group (admin)')
      .option('--description <text>', 'what the group is')
      .action(async (name: string, options: { description?: string }, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/groups', { name, ...(options.description !== undefined ? { description: options.description } : {}) })
        emit(command, body, () => console.log(`Group "${body.name}" created (id ${body.id}).`))
      }),
    'uagent groups create Engineering --description "Everyone who builds"',
  )
  example(
    groups
      .command('rename <group> [new-name]')
      .description('Rename a group and/or change its description (admin)')
      .option('--description <text>', 'a new description')
      .action(async (ref: string, name: string | undefined, options: { description?: string }, command: Command) => {
        if (name === undefined && options.description === undefined) throw new CliError('USAGE', 'give a new name, --description, or both', EXIT.usage)
        const client = new ApiClient(globals(command))
        const id = await groupId(client, ref)
        const body = await client.json('PATCH', `/groups/${encodeURIComponent(id)}`, { ...(name !== undefined ? { name } : {}), ...(options.description !== undefined ? { description: options.description } : {}) })
        emit(command, body, () => console.log(`Group ${id} is now "${body.name}"${body.description ? ` (${body.description})` : ''}.`))
      }),
    'uagent groups rename Engineering Platform',
  )
  example(
    groups
      .command('delete <group>')
      .description('Delete a group (admin): its members lose what was shared with it at their next request')
      .action(async (ref: string, _options, command: Command) => {
        const client = new ApiClient(globals(command))
        const body = await client.json('DELETE', `/groups/${encodeURIComponent(await groupId(client, ref))}`)
        emit(command, body, () => console.log(`Group ${ref} deleted.`))
      }),
    'uagent groups delete Platform',
  )
  example(
    groups
      .command('add <group> <users...>')
      .description('Add members by email or user id (admin); adding a member again changes nothing')
      .action(async (ref: string, users: string[], _options, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await groupId(client, ref)
        let body: GroupDetail | undefined
        for (const user of users) body = await client.json<GroupDetail>('POST', `/groups/${encodeURIComponent(id)}/members`, member(user))
        emit(command, body, () => showGroup(body!))
      }),
    'uagent groups add Engineering ann@example.com bob@example.com',
  )
  example(
    groups
      .command('remove <group> <users...>')
      .description('Remove members by email or user id (admin): effective at their next request')
      .action(async (ref: string, users: string[], _options, command: Command) => {
        const client = new ApiClient(globals(command))
        const id = await groupId(client, ref)
        let body = await client.json<GroupDetail>('GET', `/groups/${encodeURIComponent(id)}`)
        for (const user of users) {
          const userId = user.includes('@') ? body.members.find((m) => m.email === user.trim().toLowerCase())?.id : user.trim()
          if (!userId) throw new CliError('NOT_FOUND', `${user} is not a member of ${body.name}`, EXIT.apiError)
          body = await client.json<GroupDetail>('DELETE', `/groups/${encodeURIComponent(id)}/members/${encodeURIComponent(userId)}`)
        }
        emit(command, body, () => showGroup(body))
      }),
    'uagent groups remove Engineering bob@example.com',
  )
}
