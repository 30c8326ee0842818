import type { Command } from 'commander'
import { ApiClient } from '../client'
import { emit, example, globals, green, keyValues, red } from '../output'

export function registerSystem(program: Command): void {
  example(
    program
      .command('health')
      .description('Server health: status, uptime, memory, subsystems, features')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/health')
        emit(command, body, () => {
          const status = body.status === 'healthy' ? green(body.status) : red(body.status)
          console.log(
            keyValues([
              ['status', status],
              ['uptime', `${body.uptime} s`],
              ['memory', body.memory],
              ['connections', Object.entries(body.connections).map(([k, v]) => `${k} ${v}`).join(', ')],
              ['features', Object.entries(body.features).filter(([, on]) => on).map(([k]) => k).join(', ') || 'none'],
              ...(body.workers
                ? [['workers', `${body.workers.busy} busy of ${body.workers.started} started (at most ${body.workers.size}), ${body.workers.queued} queued of ${body.workers.queueLimit}`] as [string, string]]
                : []),
            ]),
          )
        })
      }),
    'uagent health',
  )
  example(
    program
      .command('info')
      .description('Server version, runtime and limits')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/system/info')
        emit(command, body, () =>
          console.log(
            keyValues([
              ['version', body.version],
              ['runtime', body.nodeVersion],
              ['platform', `${body.platform} ${body.architecture}`],
              ['environment', body.environment],
              ['features', body.features.join(', ')],
              ['max request', body.limits.maxRequestSize],
              ['rate limit', `${body.limits.rateLimit.max} requests / ${body.limits.rateLimit.window} s`],
            ]),
          ),
        )
      }),
    'uagent info --json',
  )
}
