import { createWriteStream } from 'node:fs'
import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { bold, dim, emit, example, globals, keyValues, table } from '../output'

/** Columns to draw in: the terminal's, else $COLUMNS, else 80. */
function terminalWidth(): number {
  const columns = process.stdout.columns || Number(process.env.COLUMNS) || 80
  return Math.max(30, columns)
}

/** One bar per value (label, bar, count), scaled so the longest line fits `width`. */
export function barChart(rows: { label: string; value: number }[], width = terminalWidth()): string {
  const labelWidth = Math.max(...rows.map((row) => row.label.length))
  const countWidth = Math.max(...rows.map((row) => String(row.value).length))
  const room = Math.max(1, width - labelWidth - countWidth - 2)
  const peak = Math.max(1, ...rows.map((row) => row.value))
  return rows
    .map((row) => {
      const length = row.value ? Math.max(1, Math.round((row.value / peak) * room)) : 0
      return `${row.label.padStart(labelWidth)} ${'█'.repeat(length)}${' '.repeat(room - length)} ${String(row.value).padStart(countWidth)}`
    })
    .join('\n')
}

const TICKS = '▁▂▃▄▅▆▇█'

/** A sparkline of at most `width` characters; neighbouring values share a character (the largest shows). */
export function sparkline(values: number[], width: number): string {
  const per = Math.max(1, Math.ceil(values.length / width))
  const points: number[] = []
  for (let i = 0; i < values.length; i += per) points.push(Math.max(...values.slice(i, i + per)))
  const peak = Math.max(...points)
  // Empty buckets are blank; any traffic shows at least the lowest tick.
  return points.map((value) => (value > 0 ? TICKS[Math.min(TICKS.length - 1, Math.floor((value / peak) * TICKS.length))]! : ' ')).join('')
}

const hourLabel = (iso: string) => `${iso.slice(11, 13)}:00`

function formatUptime(seconds: number): string {
  const days = Math.floor(seconds / 86_400)
  const hours = Math.floor((seconds % 86_400) / 3600)
  const minutes = Math.floor((seconds % 3600) / 60)
  return days ? `${days}d ${hours}h` : hours ? `${hours}h ${minutes}m` : `${minutes}m ${seconds % 60}s`
}

export function registerAnalytics(program: Command): void {
  const analytics = program.command('analytics').description('Request analytics (admin): dashboard, metric series, export')
  example(
    analytics
      .command('dashboard')
      .description('Totals, success rate, top endpoints and requests by hour over the last 24 hours')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/analytics/dashboard')
        emit(command, body, () => {
          const { overview, requests, ai, usage } = body
          console.log(bold('Last 24 hours'))
          console.log(
            keyValues([
              ['requests', `${requests.total} total, ${requests.successful} succeeded, ${requests.failed} failed`],
              ['success rate', overview.successRate],
              ['response time', `${overview.averageResponseTime} ms average`],
              ['active users', overview.activeUsers],
              ['health score', `${overview.healthScore}/100`],
              ['tokens', `${ai.totalTokens} (cost ${ai.totalCost})`],
              ['uptime', formatUptime(overview.uptime)],
            ]),
          )
          if (requests.topEndpoints.length) {
            console.log(`\n${bold('Top endpoints')}`)
            console.log(
              table(
                ['ENDPOINT', 'REQUESTS', 'AVG MS', 'ERRORS'],
                requests.topEndpoints.map((e: any) => [e.endpoint, e.requests, e.averageTime, `${(e.errorRate * 100).toFixed(1)}%`]),
              ),
            )
          }
          if (ai.topModels.length) {
            console.log(`\n${bold('Models')}`)
            console.log(table(['MODEL', 'REQUESTS', 'TOKENS'], ai.topModels.map((m: any) => [m.model, m.requests, m.tokens])))
          }
          if (usage.length) {
            console.log(`\n${bold('Usage by user')}`)
            console.log(table(['USER', 'REQUESTS', 'TOKENS'], usage.slice(0, 10).map((u: any) => [u.email ?? u.userId, u.requests, u.tokens])))
          }
          // The last bucket is the current hour (UTC); label each bar with its hour.
          const currentHour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000)
          const rows = requests.byHour.map((value: number, i: number) => ({
            label: hourLabel(new Date(currentHour.getTime() - (requests.byHour.length - 1 - i) * 3_600_000).toISOString()),
            value,
          }))
          console.log(`\n${bold('Requests by hour (UTC)')}`)
          console.log(barChart(rows))
        })
      }),
    'uagent analytics dashboard',
  )
  example(
    analytics
      .command('metrics')
      .description('Metric series as sparklines: requests, performance (mean ms), errors, users')
      .option('-r, --range <range>', 'time range: 1h, 24h, 7d or 30d', '24h')
      .option('-m, --metric <name>', 'one metric only: requests, performance, errors or users')
      .action(async (options: { range: string; metric?: string }, command: Command) => {
        const query = new URLSearchParams({ timeRange: options.range })
        if (options.metric) query.set('metric', options.metric)
        const body = await new ApiClient(globals(command)).json('GET', `/analytics/metrics?${query}`)
        emit(command, body, () => {
          const entries = Object.entries(body.metrics as Record<string, { timestamps: string[]; values: number[] }>)
          const nameWidth = Math.max(...entries.map(([name]) => name.length))
          const width = terminalWidth() - nameWidth - 1
          const first = entries[0]?.[1].timestamps[0]
          const last = entries[0]?.[1].timestamps.at(-1)
          console.log(dim(`${body.timeRange}: ${entries[0]?.[1].timestamps.length ?? 0} buckets from ${first} to ${last} (UTC)`))
          for (const [name, series] of entries) {
            const values = series.values
            const total = values.reduce((sum, value) => sum + value, 0)
            const busy = values.filter((value) => value > 0)
            const peak = Math.max(0, ...values)
            const summary =
              name === 'performance'
                ? `mean ${busy.length ? (busy.reduce((a, b) => a + b, 0) / busy.length).toFixed(1) : 0} ms over busy buckets, peak ${peak} ms`
                : name === 'users'
                  ? `peak ${peak} per bucket`
                  : `total ${total}, peak ${peak} per bucket`
            console.log(`${bold(name.padEnd(nameWidth))} ${sparkline(values, width)}`)
            console.log(`${' '.repeat(nameWidth)} ${dim(summary)}`)
          }
        })
      }),
    'uagent analytics metrics --range 1h',
    'uagent analytics metrics --range 7d --metric errors --json',
  )
  example(
    analytics
      .command('export')
      .description('Download the recorded requests of a range as CSV or JSON, streamed to a file (or stdout)')
      .option('-f, --format <format>', 'csv or json', 'csv')
      .option('-r, --range <range>', 'time range: 1h, 24h, 7d or 30d', '24h')
      .option('-o, --output <file>', 'file to write (default: standard output)')
      .action(async (options: { format: string; range: string; output?: string }, command: Command) => {
        const query = new URLSearchParams({ format: options.format, timeRange: options.range })
        const response = await new ApiClient(globals(command)).fetch(`/analytics/export?${query}`)
        const sink = options.output ? createWriteStream(options.output) : process.stdout
        const live = options.output !== undefined && process.stderr.isTTY === true
        let bytes = 0
        try {
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            bytes += chunk.byteLength
            if (!sink.write(chunk)) await new Promise((resolve) => sink.once('drain', resolve))
            if (live) process.stderr.write(`\r${bytes.toLocaleString('en-US')} bytes`)
          }
        } catch (error) {
          throw new CliError('UNREACHABLE', `the export stopped after ${bytes} bytes: ${(error as Error).message}`, EXIT.unreachable)
        } finally {
          if (live) process.stderr.write('\n')
          if (options.output) await new Promise<void>((resolve, reject) => (sink as ReturnType<typeof createWriteStream>).end((error?: Error | null) => (error ? reject(error) : resolve())))
        }
        if (!options.output) return
        const summary = { file: options.output, format: options.format, timeRange: options.range, bytes }
        emit(command, summary, () => console.log(`Wrote ${bytes.toLocaleString('en-US')} bytes (${options.format}, ${options.range}) to ${options.output}`))
      }),
    'uagent analytics export --format csv -o requests.csv',
    'uagent analytics export --format json --range 7d > week.json',
  )
}
