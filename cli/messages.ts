import type { Command } from 'commander'
import type { CliError } from './client'

const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)

/**
 * An API error in the words of the command that was run: a validation message about
 * `body.limit` or `query.offset` names the flag (`--limit must be …`) or the argument the
 * command took it from; a refused token says how to log in again.
 */
export function humanMessage(error: CliError, command: Command | null): string {
  if ((error.code === 'UNAUTHORIZED' || error.code === 'TOKEN_EXPIRED') && error.status === 401) {
    return 'not logged in or session expired: run `uagent login`'
  }
  if (error.code !== 'VALIDATION_ERROR') return error.message
  const match = /^(?:body|query|params)\.([\w.]+): (.*)$/s.exec(error.message)
  if (!match) return error.message.replace(/^(?:body|query|params): /, '')
  const [, path, problem] = match as unknown as [string, string, string]
  const field = path.split('.').filter((part) => !/^\d+$/.test(part))
  const last = field.at(-1)!
  const options = command?.options ?? []
  for (const candidate of [field.map(kebab).join('-'), kebab(last)]) {
    const option = options.find((o) => o.long === `--${candidate}` || o.short === `-${candidate}`)
    if (option) return `${option.long} ${problem}`
  }
  // A field the command takes as an argument (`uagent chat <message...>`): named as the argument.
  const argument = (command as unknown as { registeredArguments?: { name(): string }[] } | null)?.registeredArguments?.find(
    (arg) => arg.name().toLowerCase() === last.toLowerCase(),
  )
  if (argument) return `<${argument.name()}> ${problem}`
  return `${last} ${problem}`
}
