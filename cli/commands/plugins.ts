import { type Command, Option } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { bold, dim, emit, example, globals, keyValues, table } from '../output'

const INSTALL_VERSION = '--install-version'

/**
 * Commander reads the program's own options (`--version` among them) anywhere on the line, so
 * `uagent plugins install npm x --version 1.2.0` would print uagent's version. After
 * `plugins install`, `--version` is renamed to the install's own option before parsing.
 */
export function installVersionArgs(argv: string[]): string[] {
  const plugins = argv.indexOf('plugins')
  if (plugins === -1 || argv[plugins + 1] !== 'install') return argv
  return argv.map((arg, index) => {
    if (index <= plugins + 1) return arg
    if (arg === '--version') return INSTALL_VERSION
    if (arg.startsWith('--version=')) return `${INSTALL_VERSION}=${arg.slice('--version='.length)}`
    return arg
  })
}

const usage = (message: string) => new CliError('USAGE', message, EXIT.usage)

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw usage('--params - reads JSON from stdin, but stdin is a terminal')
  return await new Response(Bun.stdin.stream()).text()
}

function parseObject(text: string, from: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw usage(`${from} is not valid JSON`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw usage(`${from} must be a JSON object`)
  return value as Record<string, unknown>
}

/**
 * `key=value` read by the type the action's schema gives the key: strings stay as typed,
 * numbers, booleans, arrays and objects are parsed; a key the schema does not describe is
 * parsed as JSON when it is JSON, and kept as text otherwise.
 */
function coerce(key: string, raw: string, schema: Record<string, any> | undefined): unknown {
  const types: string[] = schema?.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes('string')) return raw
  if (types.includes('integer') || types.includes('number')) {
    const number = Number(raw)
    if (raw.trim() === '' || !Number.isFinite(number)) throw usage(`--param ${key}: expected a number, got "${raw}"`)
    return number
  }
  if (types.includes('boolean')) {
    if (raw !== 'true' && raw !== 'false') throw usage(`--param ${key}: expected true or false, got "${raw}"`)
    return raw === 'true'
  }
  if (types.includes('object') || types.includes('array')) {
    try {
      return JSON.parse(raw)
    } catch {
      throw usage(`--param ${key}: expected JSON, got "${raw}"`)
    }
  }
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

export function registerPlugins(program: Command): void {
  const plugins = program.command('plugins').description('Built-in and installed plugins: list, run, install')

  example(
    plugins
      .command('list')
      .description('Every plugin with its version, status and permissions')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/plugins')
        emit(command, body, () => {
          console.log(
            table(
              ['NAME', 'VERSION', 'STATUS', 'SOURCE', 'CATEGORY', 'DESCRIPTION'],
              body.plugins.map((p: any) => [p.name, p.version, p.status, p.source, p.category, p.message ?? p.description]),
              70,
            ),
          )
          console.log(dim(`${body.total} plugins`))
        })
      }),
    'uagent plugins list',
  )

  example(
    plugins
      .command('show <name>')
      .description("A plugin's manifest: its actions and their parameters")
      .action(async (name: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', `/plugins/${encodeURIComponent(name)}`)
        emit(command, body, () => {
          const pairs: [string, unknown][] = [
            ['name', body.name],
            ['version', body.version],
            ['status', body.status],
            ['source', body.source],
            ['category', body.category],
            ['permissions', body.permissions.join(', ') || '-'],
            ['description', body.description],
          ]
          if (body.message) pairs.push(['problem', body.message])
          console.log(keyValues(pairs))
          for (const [action, spec] of Object.entries<any>(body.actions)) {
            console.log(`\n${bold(action)}${spec.readOnly ? dim(' (read-only)') : ''}  ${spec.description}`)
            const required = new Set<string>(spec.parameters.required ?? [])
            for (const [param, schema] of Object.entries<any>(spec.parameters.properties ?? {})) {
              const type = Array.isArray(schema.type) ? schema.type.join('|') : (schema.type ?? 'any')
              console.log(`  ${param}${required.has(param) ? '' : '?'}: ${type}${schema.description ? dim(`  ${schema.description}`) : ''}`)
            }
          }
        })
      }),
    'uagent plugins show calculator',
  )

  example(
    plugins
      .command('exec <name> <action>')
      .description('Run one action and print its result')
      .option('-p, --param <key=value>', 'a parameter (repeatable); typed by the action\'s schema', collect, [])
      .option('--params <json>', 'all parameters as a JSON object, or - to read it from stdin')
      .action(async (name: string, action: string, options: { param: string[]; params?: string }, command: Command) => {
        const client = new ApiClient(globals(command))
        const parameters: Record<string, unknown> =
          options.params === undefined ? {} : parseObject(options.params === '-' ? await readStdin() : options.params, options.params === '-' ? 'stdin' : '--params')
        if (options.param.length) {
          const pairs = options.param.map((pair) => {
            const at = pair.indexOf('=')
            if (at <= 0) throw usage(`--param expects key=value, got "${pair}"`)
            return [pair.slice(0, at), pair.slice(at + 1)] as const
          })
          // The schema says how to read each value ("42" is a number for a number, text for a string).
          const manifest = await client.json('GET', `/plugins/${encodeURIComponent(name)}`)
          const properties = manifest.actions?.[action]?.parameters?.properties ?? {}
          for (const [key, raw] of pairs) parameters[key] = coerce(key, raw, Object.hasOwn(properties, key) ? properties[key] : undefined)
        }
        const body = await client.json('POST', `/plugins/${encodeURIComponent(name)}/execute`, { action, parameters })
        emit(command, body, () => {
          const result = body.result
          console.log(typeof result === 'string' ? result : JSON.stringify(result, null, 2))
        })
      }),
    'uagent plugins exec calculator evaluate --param expression="2 * (3 + 4)"',
    'echo \'{"timezone":"Europe/Paris"}\' | uagent plugins exec datetime now --params -',
  )

  example(
    plugins
      .command('install <source> <package>')
      .description('Install a plugin (admin): source is npm, git or url')
      .option('-v, --version <version>', 'npm version or tag; git tag, branch or commit', 'latest')
      // What main() renames --version to after `plugins install` (see installVersionArgs).
      .addOption(new Option(`${INSTALL_VERSION} <version>`).hideHelp())
      .option('--sha256 <hex>', 'url only: the expected SHA-256 of the .tgz')
      .action(async (source: string, pkg: string, options: { version: string; installVersion?: string; sha256?: string }, command: Command) => {
        if (!['npm', 'git', 'url'].includes(source)) throw usage(`source must be npm, git or url, got "${source}"`)
        const body = await new ApiClient(globals(command)).json('POST', '/plugins/install', {
          source,
          package: pkg,
          version: options.installVersion ?? options.version,
          ...(options.sha256 ? { sha256: options.sha256 } : {}),
        })
        emit(command, body, () => console.log(`${body.message} (status ${body.status})`))
      }),
    'uagent plugins install npm uagent-plugin-weather --version 1.2.0',
    'uagent plugins install git https://example.com/me/my-plugin.git --version v1.0.0',
    'uagent plugins install url https://example.com/my-plugin-1.0.0.tgz --sha256 <hex>',
  )

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    example(
      plugins
        .command(`${verb} <name>`)
        .description(enabled ? 'Enable a plugin (admin)' : 'Disable a plugin: running it answers PLUGIN_DISABLED (admin)')
        .action(async (name: string, _options, command: Command) => {
          const body = await new ApiClient(globals(command)).json('POST', `/plugins/${encodeURIComponent(name)}/${verb}`)
          emit(command, body, () => console.log(`${body.plugin} is ${body.status}`))
        }),
      `uagent plugins ${verb} calculator`,
    )
  }

  example(
    plugins
      .command('remove <name>')
      .alias('uninstall')
      .description('Uninstall a plugin: its folder and record are deleted (admin)')
      .action(async (name: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('DELETE', `/plugins/${encodeURIComponent(name)}`)
        emit(command, body, () => console.log(body.message))
      }),
    'uagent plugins remove my-plugin',
  )
}
