import type { Command } from 'commander'
import { example } from '../output'

export function registerServe(program: Command): void {
  example(
    program
      .command('serve')
      .description('Run the server in this process (configuration from the environment)')
      .option('-p, --port <port>', 'listen port (PORT)')
      .option('--host <host>', 'listen address (HOST)')
      .option('--data <dir>', 'data directory (UAGENT_DATA_DIR)')
      .action(async (options: { port?: string; host?: string; data?: string }) => {
        if (options.port) process.env.PORT = options.port
        if (options.host) process.env.HOST = options.host
        if (options.data) process.env.UAGENT_DATA_DIR = options.data
        await import('../../src/index')
        // The server keeps the process alive; never fall through to the CLI's exit.
        await new Promise(() => {})
      }),
    'uagent serve --port 8080',
  )
}
