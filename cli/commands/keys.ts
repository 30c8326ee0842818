import type { Command } from 'commander'
import { ApiClient } from '../client'
import { bold, dim, emit, example, globals, table } from '../output'

const when = (iso: string | null, never: string) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : never)

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('Personal API keys (uak_…) for tools and OpenAI clients')
  example(
    keys
      .command('create <name...>')
      .description('Create an API key; it is shown this once')
      .option('--expires <duration>', 'lifetime: seconds, or e.g. 90d, 12h, 30m (default: never expires)')
      .action(async (words: string[], options: { expires?: string }, command: Command) => {
        const expiresIn = options.expires === undefined ? undefined : /^\d+$/.test(options.expires.trim()) ? Number(options.expires) : options.expires
        const body = await new ApiClient(globals(command)).json('POST', '/auth/api-keys', { name: words.join(' '), ...(expiresIn !== undefined ? { expiresIn } : {}) })
        emit(command, body, () => {
          console.log(body.key)
          process.stderr.write(
            `${dim(`API key "${body.name}" (id ${body.id}${body.expiresAt ? `, expires ${when(body.expiresAt, '')}` : ''}).`)}\n` +
              `${bold('Copy it now: it is stored hashed and cannot be shown again.')} Use it as Authorization: Bearer <key>.\n`,
          )
        })
      }),
    'uagent keys create laptop',
    'uagent keys create "CI job" --expires 90d',
  )
  example(
    keys
      .command('list')
      .description('Your API keys (never the secret)')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/auth/api-keys')
        emit(command, body, () => {
          if (!body.keys.length) return console.log(dim('No API keys. Create one with: uagent keys create NAME'))
          console.log(
            table(
              ['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED', 'EXPIRES'],
              body.keys.map((k: any) => [k.id, k.name, `${k.prefix}…`, when(k.createdAt, ''), when(k.lastUsedAt, 'never'), when(k.expiresAt, 'never')]),
            ),
          )
        })
      }),
    'uagent keys list',
  )
  example(
    keys
      .command('revoke <id>')
      .description('Revoke (delete) an API key; it stops working at once')
      .action(async (id: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('DELETE', `/auth/api-keys/${encodeURIComponent(id)}`)
        emit(command, body, () => console.log(`API key ${id} revoked.`))
      }),
    'uagent keys revoke 3f0c…',
  )
}
