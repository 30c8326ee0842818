import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, table } from '../output'
import { integer } from '../parse'
import { ask } from '../prompt'

interface Account {
  id: string
  email: string
  roles: string[]
  mfaEnabled: boolean
  disabled: boolean
  createdAt: string
}

/** A user named by id or by email (looked up in the list, a page at a time). */
async function resolveUser(client: ApiClient, ref: string): Promise<Account> {
  for (let offset = 0; ; offset += 100) {
    const page = await client.json<{ users: Account[]; hasMore: boolean }>('GET', `/auth/users?limit=100&offset=${offset}`)
    const found = page.users.find((user) => user.id === ref || user.email === ref.trim().toLowerCase())
    if (found) return found
    if (!page.hasMore) break
  }
  throw new CliError('NOT_FOUND', `no user with id or email "${ref}" (see uagent users list)`, EXIT.apiError)
}

const state = (user: Account) => (user.disabled ? 'disabled' : 'active')

export function registerUsers(program: Command): void {
  const users = program.command('users').description('Manage user accounts (admin)')
  example(
    users
      .command('list')
      .description('List accounts, oldest first')
      .option('--limit <n>', "how many (1-100; the server's default is 50)", integer)
      .option('--offset <n>', 'skip this many (default 0)', integer)
      .action(async (options: { limit?: number; offset?: number }, command: Command) => {
        const query = new URLSearchParams()
        if (options.limit !== undefined) query.set('limit', String(options.limit))
        if (options.offset !== undefined) query.set('offset', String(options.offset))
        const body = await new ApiClient(globals(command)).json('GET', query.size ? `/auth/users?${query}` : '/auth/users')
        emit(command, body, () => {
          console.log(
            table(
              ['EMAIL', 'ROLES', 'MFA', 'STATE', 'CREATED', 'ID'],
              body.users.map((u: Account) => [u.email, u.roles.join(','), u.mfaEnabled ? 'on' : 'off', state(u), u.createdAt.slice(0, 10), u.id]),
            ),
          )
          console.log(dim(`${body.users.length} of ${body.total} users${body.hasMore ? ' (more with --offset)' : ''}`))
        })
      }),
    'uagent users list',
  )
  example(
    users
      .command('create')
      .description('Create a user')
      .requiredOption('--email <email>', 'email of the new user')
      .option('--password <password>', 'password (asked for when omitted on a terminal)')
      .option('--role, --roles <role...>', 'roles: user, admin (several, or comma-separated)', ['user'])
      .action(async (options: { email: string; password?: string; roles: string[] }, command: Command) => {
        const roles = options.roles.flatMap((role) => role.split(',')).map((role) => role.trim()).filter(Boolean)
        const password = options.password ?? (await ask('Password for the new user: ', true))
        const body = await new ApiClient(globals(command)).json('POST', '/auth/users', { email: options.email, password, roles })
        emit(command, body, () => console.log(`Created ${body.user.email} (${body.user.roles.join(', ')}), id ${body.user.id}`))
      }),
    'uagent users create --email ann@example.com --password "$PW" --role user',
  )
  example(
    users
      .command('password <user>')
      .description("Set a user's password (by id or email); every session of that user is signed out")
      .option('--password <password>', 'the new password, 8+ characters (asked for twice without echo on a terminal)')
      .action(async (ref: string, options: { password?: string }, command: Command) => {
        let newPassword = options.password
        if (newPassword === undefined) {
          newPassword = await ask('New password: ', true)
          if ((await ask('New password again: ', true)) !== newPassword) throw new CliError('USAGE', 'the two passwords differ', EXIT.usage)
        }
        const client = new ApiClient(globals(command))
        const user = await resolveUser(client, ref)
        const body = await client.json('POST', `/auth/users/${encodeURIComponent(user.id)}/password`, { newPassword })
        emit(command, body, () => console.log(`Password of ${user.email} set; ${body.sessionsRevoked} session${body.sessionsRevoked === 1 ? '' : 's'} signed out.`))
      }),
    'uagent users password ann@example.com --password "$NEW"',
  )
  for (const [name, description, done] of [
    ['unlock', 'Clear the login throttling of a user (after too many failed logins)', 'unlocked'],
    ['disable', 'Disable a user: no logins, and their tokens stop working at once', 'disabled'],
    ['enable', 'Enable a disabled user', 'enabled'],
  ] as const) {
    example(
      users
        .command(`${name} <user>`)
        .description(`${description} (by id or email)`)
        .action(async (ref: string, _options, command: Command) => {
          const client = new ApiClient(globals(command))
          const user = await resolveUser(client, ref)
          const body = await client.json('POST', `/auth/users/${encodeURIComponent(user.id)}/${name}`)
          emit(command, body, () => console.log(`${user.email} ${done}.${body.sessionsRevoked ? ` ${body.sessionsRevoked} session(s) signed out.` : ''}`))
        }),
      `uagent users ${name} ann@example.com`,
    )
  }
  example(
    users
      .command('delete <user>')
      .description('Delete a user and everything they own: conversations, collections, documents, sessions (by id or email)')
      .option('-y, --yes', 'do not ask for confirmation on a terminal')
      .action(async (ref: string, options: { yes?: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const user = await resolveUser(client, ref)
        if (!options.yes && process.stdin.isTTY) {
          const answer = await ask(`Delete ${user.email} and everything they own? Type the email to confirm: `)
          if (answer.trim().toLowerCase() !== user.email) throw new CliError('CANCELLED', 'nothing deleted', EXIT.usage)
        }
        const body = await client.json('DELETE', `/auth/users/${encodeURIComponent(user.id)}`)
        emit(command, body, () => console.log(`Deleted ${user.email} with everything they owned.`))
      }),
    'uagent users delete ann@example.com --yes',
  )
}
