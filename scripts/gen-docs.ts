// Generates the two reference pages that must follow the code: docs/cli.md from the `uagent`
// program (its commands, arguments, options, descriptions and examples, as commander holds them)
// and the configuration table of docs/configuration.md from src/config.ts (each variable loadConfig
// reads, its default and range from the call that reads it, its meaning from the Config field's
// comment). The output depends on nothing but the code: no terminal width, no environment.
// Run: bun scripts/gen-docs.ts   (test/docs.test.ts fails, naming this command, when a page is stale)
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Argument, Command, Option } from 'commander'
import { buildProgram } from '../cli/index'

export const ROOT = join(import.meta.dir, '..')
export const CLI_PAGE = 'docs/cli.md'
export const CONFIG_PAGE = 'docs/configuration.md'
export const CONFIG_BEGIN = '<!-- generated from src/config.ts by `bun scripts/gen-docs.ts`: edit the comments there, not this table -->'
export const CONFIG_END = '<!-- end of the generated table -->'

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ')

// ---------------------------------------------------------------- the CLI reference

/** The text a command's `addHelpText` hooks print (examples), without the "Example:" line and the `$ ` prompts. */
function helpTexts(command: Command, position: 'before' | 'after'): string {
  let out = ''
  // addHelpText registers a listener of this event; emitting it collects the text without printing help.
  ;(command as unknown as NodeJS.EventEmitter).emit(`${position}Help`, { error: false, command, write: (text: string) => (out += text) })
  return out.trim()
}

function examplesOf(command: Command): string[] {
  return helpTexts(command, 'after')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('$ '))
    .map((line) => line.slice(2))
}

function argumentsOf(command: Command): readonly Argument[] {
  return command.registeredArguments ?? []
}

function optionRows(options: readonly Option[]): string[] {
  const rows: string[] = []
  for (const option of options) {
    if (option.hidden) continue
    const defaults = option.defaultValue === undefined || option.defaultValue === false ? '' : ` (default: \`${option.defaultValueDescription ?? JSON.stringify(option.defaultValue)}\`)`
    const choices = option.argChoices ? ` One of: ${option.argChoices.map((c) => `\`${c}\``).join(', ')}.` : ''
    rows.push(`| \`${cell(option.flags)}\` | ${cell(option.description)}${choices}${defaults} |`)
  }
  return rows
}

function usageLine(command: Command, path: string): string {
  return `${path} ${command.usage()}`.trim()
}

function commandSection(command: Command, path: string, depth: number): string[] {
  const lines: string[] = [`${'#'.repeat(Math.min(depth, 4))} \`${path}\``, '']
  if (command.description()) lines.push(command.description(), '')
  const subcommands = command.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden && c.name() !== 'help')
  if (subcommands.length && !argumentsOf(command).length && command.options.length === 0) {
    lines.push(`Subcommands: ${subcommands.map((c) => `\`${c.name()}\``).join(', ')}.`, '')
  } else {
    lines.push('```', usageLine(command, path), '```', '')
    const args = argumentsOf(command)
    if (args.length) {
      lines.push('| argument | meaning |', '|---|---|')
      for (const argument of args) {
        const name = `${argument.required ? '<' : '['}${argument.name()}${argument.variadic ? '...' : ''}${argument.required ? '>' : ']'}`
        lines.push(`| \`${name}\` | ${cell(argument.description || '')} |`)
      }
      lines.push('')
    }
    const options = optionRows(command.options)
    if (options.length) lines.push('| option | meaning |', '|---|---|', ...options, '')
    const examples = examplesOf(command)
    if (examples.length) lines.push(examples.length > 1 ? 'Examples:' : 'Example:', '', '```sh', ...examples, '```', '')
  }
  for (const sub of subcommands) lines.push(...commandSection(sub, `${path} ${sub.name()}`, depth + 1))
  return lines
}

/** docs/cli.md, from the program `uagent` runs. */
export function cliReference(): string {
  const program = buildProgram()
  const lines = [
    '# Command line reference: `uagent`',
    '',
    '<!-- generated from the commander program in cli/ by `bun scripts/gen-docs.ts`: edit the commands there, not this page -->',
    '',
    program.description(),
    '',
    'From a checkout, `bun run uagent …` runs it; `bun link` in the checkout gives a plain `uagent` command',
    '(with Bun\'s bin folder, `~/.bun/bin`, on your PATH). Do not use `bunx uagent`: that fetches an unrelated',
    'npm package. `uagent COMMAND --help` prints the same as this page for one command.',
    '',
    'Exit codes: 0 success, 1 the server answered an error, 2 usage error (unknown command or option, missing',
    'argument, malformed option value: refused before any request), 3 server unreachable. Errors are printed on',
    'stderr as `error CODE: message`; a validation error names the flag (`--limit must be an integer from 1 to',
    '100`), not the API field.',
    '',
    '- **Logins.** `uagent login` stores the tokens in `$XDG_CONFIG_HOME/uagent/credentials.json`',
    '  (`~/.config/uagent/` without it), mode 0600; an expired access token is refreshed with the stored refresh',
    '  token and the request retried. `uagent logout` revokes the session and removes the file. `--token`, or',
    '  `UAGENT_TOKEN`, takes an access token or an API key instead.',
    '- **Output.** Aligned tables that fit the terminal (`$COLUMNS` when not a terminal), colour only on a',
    '  terminal and never with `NO_COLOR`, progress bars on a terminal. `--json` prints the API\'s response',
    '  body as it is.',
    '- **Files.** `rag ingest` sends plain-text files as JSON and uploads the others (PDF, Word, anything not',
    '  UTF-8 text) for the server to extract; `rag sync` uploads every new or changed file. Every failure is',
    '  printed with its reason and the command exits 1.',
    '- **Ingestion jobs.** A file the server makes a job (it needs OCR, or is still being read after',
    '  `UAGENT_INGEST_JOB_AFTER_MS`) is followed by `rag ingest` and `rag sync` with a progress bar per job',
    '  (redrawn on a terminal; elsewhere one line on stderr per status and 10 % step) until it ends;',
    '  `--no-wait` prints the job ids instead (in `--json`: `jobs: [{ id, jobId }]`). `rag jobs [--watch]`',
    '  lists them, `rag jobs show <id> [--wait]` follows one, `rag jobs cancel <id>` stops one.',
    '',
    '## Global options',
    '',
    'Given before the command (`uagent --json rag collections`).',
    '',
    '| option | meaning |',
    '|---|---|',
    ...optionRows(program.options),
    '',
    '## Commands',
    '',
  ]
  for (const command of program.commands) {
    if (command.name() === 'help') continue
    lines.push(...commandSection(command, `uagent ${command.name()}`, 3))
  }
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`
}

// ---------------------------------------------------------------- the configuration table

interface Field {
  name: string
  doc: string
  defaultOverride?: string
}

/** The Config interface's fields with their comments (`@default` taken apart). */
function configFields(source: string): Map<string, Field> {
  const body = /export interface Config \{([\s\S]*?)\n\}/.exec(source)![1]!
  const fields = new Map<string, Field>()
  for (const match of body.matchAll(/(?:\/\*\*([\s\S]*?)\*\/\s*)?\n\s*(\w+)\??:/g)) {
    const raw = (match[1] ?? '').replace(/^\s*\*\s?/gm, '').replace(/\s+/g, ' ').trim()
    const [doc, defaultOverride] = raw.split(/\s*@default\s+/)
    fields.set(match[2]!, { name: match[2]!, doc: doc!.trim(), defaultOverride: defaultOverride?.trim() })
  }
  return fields
}

/** The value of a literal expression; one naming code (a computed default) stays as written, for `@default` to explain. */
const evaluate = (expression: string): number | string => {
  try {
    return Number(new Function(`return (${expression})`)())
  } catch {
    return expression.trim()
  }
}

/** What the expression that reads a variable says of it: its default and accepted values. */
function readCall(expression: string, variable: string): { default: string; accepts: string } {
  const quoted = variable.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const integer = new RegExp(`integer\\(env, '${quoted}', ([^,]+), ([^,]+), ([^)]+)\\)`).exec(expression)
  if (integer) return { default: `\`${evaluate(integer[1]!)}\``, accepts: `whole number, ${evaluate(integer[2]!).toLocaleString('en-US')}–${evaluate(integer[3]!).toLocaleString('en-US')}` }
  const toggle = new RegExp(`toggle\\(env, '${quoted}', (true|false)\\)`).exec(expression)
  if (toggle) return { default: `\`${toggle[1] === 'true' ? 'on' : 'off'}\``, accepts: '`on` or `off` (also 1/0, true/false, yes/no)' }
  const fallback = new RegExp(`text\\(env, '${quoted}'\\) \\?\\? '([^']*)'`).exec(expression)
  if (/duration\(env/.test(expression)) return { default: 'none', accepts: 'seconds, or `90s`, `30m`, `6h`, `1d` (1 minute to 1 year); `0`: none' }
  if (/origins\(env/.test(expression)) return { default: 'none', accepts: 'origins, comma-separated (`https://app.example.com`), or `*`' }
  if (/url\(env/.test(expression)) return { default: 'none', accepts: 'an http(s) URL' }
  if (fallback) return { default: `\`${fallback[1]}\``, accepts: '' }
  return { default: 'none', accepts: '' }
}

/** One row per variable loadConfig reads, in the order it returns them. */
export function configurationRows(source = readFileSync(join(ROOT, 'src/config.ts'), 'utf8')): string[][] {
  const fields = configFields(source)
  const load = /export function loadConfig[\s\S]*?\n\}/.exec(source)![0]
  // Checks and reads done before the returned object, by the name of the constant they fill.
  const constants = new Map<string, string>()
  for (const match of load.matchAll(/const (\w+) = ([^\n]+)/g)) constants.set(match[1]!, match[2]!)
  const returned = /return \{([\s\S]*?)\n {2}\}/.exec(load)![1]!
  const rows: string[][] = []
  const seen = new Set<string>()
  for (const line of returned.split('\n')) {
    const match = /^\s*(\w+)(?::\s*(.+?))?,?\s*$/.exec(line)
    if (!match) continue
    const [, name, given] = match
    const expression = given ?? constants.get(name!) ?? ''
    const field = fields.get(name!)
    if (!field) throw new Error(`src/config.ts: loadConfig returns ${name}, which the Config interface does not declare`)
    for (const variable of new Set([...expression.matchAll(/'((?:UAGENT_|PORT|HOST|NODE_ENV)[A-Z_]*)'|env\.(UAGENT_[A-Z_]+)/g)].map((m) => m[1] ?? m[2]!))) {
      if (seen.has(variable)) continue
      seen.add(variable)
      if (!field.doc) throw new Error(`src/config.ts: the Config field ${name} (${variable}) has no comment to document it with`)
      const read = readCall(expression, variable)
      rows.push([`\`${variable}\``, field.defaultOverride ?? read.default, cell(read.accepts ? `${field.doc} Accepts: ${read.accepts}.` : field.doc)])
    }
  }
  return rows
}

export function configurationTable(): string {
  const rows = configurationRows()
  return ['| variable | default | meaning |', '|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n')
}

/** docs/configuration.md with its table regenerated (the prose around it kept as written). */
export function configurationPage(current = readFileSync(join(ROOT, CONFIG_PAGE), 'utf8')): string {
  const begin = current.indexOf(CONFIG_BEGIN)
  const end = current.indexOf(CONFIG_END)
  if (begin < 0 || end < begin) throw new Error(`${CONFIG_PAGE} must hold the lines\n${CONFIG_BEGIN}\n${CONFIG_END}\nwhere the table goes`)
  return `${current.slice(0, begin)}${CONFIG_BEGIN}\n\n${configurationTable()}\n\n${current.slice(end)}`
}

if (import.meta.main) {
  writeFileSync(join(ROOT, CLI_PAGE), cliReference())
  writeFileSync(join(ROOT, CONFIG_PAGE), configurationPage())
  console.log(`wrote ${CLI_PAGE} and the table of ${CONFIG_PAGE}`)
}
