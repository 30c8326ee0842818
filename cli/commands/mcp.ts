import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { relayMcp } from '../mcp-relay'
import { dim, emit, example, globals, keyValues, table } from '../output'

const usage = (message: string) => new CliError('USAGE', message, EXIT.usage)

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}

/** `KEY=value` pairs into an object (headers, environment variables). */
function pairs(items: string[], option: string): Record<string, string> {
  const result: Record<string, string> = {}
  for (const item of items) {
    const at = item.indexOf(option === '--header' ? ':' : '=')
    if (at <= 0) throw usage(option === '--header' ? `--header: expected "Name: value", got "${item}"` : `--env: expected KEY=value, got "${item}"`)
    result[item.slice(0, at).trim()] = item.slice(at + 1).trim()
  }
  return result
}

function describe(server: any): string {
  const rows: [string, unknown][] = [
    ['name', server.name],
    ['transport', server.transport],
    server.transport === 'http' ? ['url', server.url] : ['command', [server.command, ...(server.args ?? [])].join(' ')],
    ['status', server.status],
  ]
  if (server.error) rows.push(['error', server.error])
  if (server.headerNames.length) rows.push(['headers', server.headerNames.join(', ')])
  if (server.envNames.length) rows.push(['env', server.envNames.join(', ')])
  rows.push(['tools', server.tools.map((t: any) => t.name).join(', ') || '-'])
  return keyValues(rows)
}

export function registerMcp(program: Command): void {
  const mcp = program
    .command('mcp')
    .description('Model Context Protocol: serve this server to an MCP client over stdio (no subcommand), or manage the MCP servers agents use (mcp servers …)')
    .action(async (_options, command: Command) => {
      const client = new ApiClient(globals(command))
      process.stderr.write(`uagent mcp: relaying MCP between stdio and ${client.baseUrl}/mcp\n`)
      await relayMcp(client)
    })
  example(
    mcp,
    'uagent mcp                                   # what an MCP client starts: {"command": "uagent", "args": ["mcp"]}',
    'uagent mcp --url http://127.0.0.1:3000 --token uak_…',
  )

  const servers = mcp.command('servers').description('MCP servers whose tools agents, the voice autopilot and tool calls use (admin)')

  example(
    servers
      .command('add <name> [command...]')
      .description('Register an MCP server: --endpoint URL for Streamable HTTP, or the command (and its arguments, after --) that starts a stdio server')
      .option('--endpoint <url>', "the server's Streamable HTTP endpoint (--url stays the address of this server)")
      .option('-H, --header <name: value>', 'a header sent with every request (repeatable)', collect, [])
      .option('-e, --env <KEY=value>', 'an environment variable of the started command (repeatable)', collect, [])
      .action(async (name: string, words: string[], options: { endpoint?: string; header: string[]; env: string[] }, command: Command) => {
        if (options.endpoint && words.length) throw usage('give either --endpoint or a command, not both')
        if (!options.endpoint && !words.length) throw usage('give --endpoint URL for a Streamable HTTP server, or the command that starts a stdio server (after --)')
        if (options.endpoint && options.env.length) throw usage('--env is for stdio servers (a command)')
        if (!options.endpoint && options.header.length) throw usage('--header is for Streamable HTTP servers (--endpoint)')
        const body = options.endpoint
          ? { name, url: options.endpoint, ...(options.header.length ? { headers: pairs(options.header, '--header') } : {}) }
          : { name, command: words[0], args: words.slice(1), env: pairs(options.env, '--env') }
        const server = await new ApiClient(globals(command)).json('POST', '/mcp/servers', body)
        emit(command, server, () => console.log(describe(server)))
      }),
    'uagent mcp servers add files -- npx -y @modelcontextprotocol/server-filesystem /srv/shared',
    'uagent mcp servers add tickets --endpoint http://127.0.0.1:8931/mcp -H "Authorization: Bearer …"',
  )

  example(
    servers
      .command('list')
      .description('Registered MCP servers, their status and tools')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/mcp/servers')
        emit(command, body, () => {
          if (!body.servers.length) return console.log(dim('No MCP servers. Register one with: uagent mcp servers add NAME --endpoint URL (or -- COMMAND ARGS…)'))
          console.log(
            table(
              ['NAME', 'TRANSPORT', 'STATUS', 'TOOLS', 'TARGET'],
              body.servers.map((s: any) => [s.name, s.transport, s.status, s.tools.length, s.error ?? s.url ?? [s.command, ...(s.args ?? [])].join(' ')]),
              70,
            ),
          )
        })
      }),
    'uagent mcp servers list',
  )

  example(
    servers
      .command('show <name>')
      .description('One MCP server and its tools')
      .action(async (name: string, _options, command: Command) => {
        const server = await new ApiClient(globals(command)).json('GET', `/mcp/servers/${encodeURIComponent(name)}`)
        emit(command, server, () => console.log(describe(server)))
      }),
    'uagent mcp servers show files',
  )

  for (const [verb, description] of [
    ['enable', 'Enable an MCP server: its tools are offered again'],
    ['disable', 'Disable an MCP server: its tools are no longer offered, its process is stopped'],
    ['refresh', "List a server's tools again"],
  ] as const) {
    example(
      servers
        .command(`${verb} <name>`)
        .description(description)
        .action(async (name: string, _options, command: Command) => {
          const server = await new ApiClient(globals(command)).json('POST', `/mcp/servers/${encodeURIComponent(name)}/${verb}`)
          emit(command, server, () => console.log(describe(server)))
        }),
      `uagent mcp servers ${verb} files`,
    )
  }

  example(
    servers
      .command('remove <name>')
      .description('Remove an MCP server')
      .action(async (name: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('DELETE', `/mcp/servers/${encodeURIComponent(name)}`)
        emit(command, body, () => console.log(`MCP server ${name} removed.`))
      }),
    'uagent mcp servers remove files',
  )
}
