#!/usr/bin/env bun
import { Command, CommanderError, Option } from 'commander'
import pkg from '../package.json'
import { CliError, DEFAULT_URL, EXIT } from './client'
import { registerAgents } from './commands/agents'
import { registerAssistants } from './commands/assistants'
import { registerAdmin } from './commands/admin'
import { registerAnalytics } from './commands/analytics'
import { registerAuth } from './commands/auth'
import { registerChat } from './commands/chat'
import { registerConversations } from './commands/conversations'
import { registerGroups } from './commands/groups'
import { registerKeys } from './commands/keys'
import { registerMcp } from './commands/mcp'
import { registerModels } from './commands/models'
import { installVersionArgs, registerPlugins } from './commands/plugins'
import { registerRag } from './commands/rag'
import { registerServe } from './commands/serve'
import { registerSso } from './commands/sso'
import { registerSystem } from './commands/system'
import { registerUsers } from './commands/users'
import { humanMessage } from './messages'
import { registerVoice } from './commands/voice'
import { red } from './output'

let running: Command | null = null

/** The `uagent` program. Each area registers its commands; adding an area is one file and one line here. */
export function buildProgram(): Command {
  const program = new Command('uagent')
    .description('Command line for Universal Agent, the offline self-hosted AI agent server')
    .version(pkg.version, '-V, --version')
    .addOption(new Option('--url <url>', `server URL (env UAGENT_URL, then the stored login, then ${DEFAULT_URL})`))
    .addOption(new Option('--token <token>', 'access token (env UAGENT_TOKEN, then the stored login)'))
    .option('--json', 'print the API response body as JSON, nothing else')
    .showHelpAfterError()
    .exitOverride()
  for (const register of [registerServe, registerSystem, registerAuth, registerSso, registerKeys, registerUsers, registerGroups, registerAdmin, registerChat, registerConversations, registerRag, registerAgents, registerAssistants, registerModels, registerPlugins, registerAnalytics, registerVoice, registerMcp]) register(program)
  // The command being run, so that an API error can be told in its terms (its flags, not API fields).
  program.hook('preAction', (_program, actionCommand) => {
    running = actionCommand
  })
  // Commander's own failures (unknown command or option, missing argument) exit 2.
  const override = (command: Command) => {
    command.exitOverride()
    command.commands.forEach(override)
  }
  override(program)
  return program
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(installVersionArgs(argv))
    return EXIT.ok
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok
      // Help asked for (`uagent help`) is a success; help shown because no command was given is a usage error.
      if (error.code === 'commander.help') return error.exitCode === 0 ? EXIT.ok : EXIT.usage
      return EXIT.usage
    }
    if (error instanceof CliError) {
      process.stderr.write(`${red('error')} ${error.code}: ${humanMessage(error, running)}\n`)
      return error.exitCode
    }
    process.stderr.write(`${red('error')} INTERNAL: ${(error as Error)?.message ?? String(error)}\n`)
    return EXIT.apiError
  }
}

if (import.meta.main) process.exit(await main())
