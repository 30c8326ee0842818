import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseCsv } from '../modules/analytics/helpers'
import { makeServerWith, ScriptedGenerator } from '../helpers'
import { liveServer } from './live-server'

// Password hashing on a busy machine makes logins slow: room for them beyond the 5 s default.
setDefaultTimeout(30_000)

const server = makeServerWith(new ScriptedGenerator('Analytics from the command line.'))
const live = liveServer(server.app)
const { config } = live
let token = ''

beforeAll(async () => {
  token = (await server.login()).accessToken
  // Some traffic to show: chats, lists, and two failures.
  for (let i = 0; i < 3; i++) await server.call('POST', '/chat', { token, body: { message: `hello ${i}` } })
  for (let i = 0; i < 5; i++) await server.call('GET', '/conversations', { token })
  for (let i = 0; i < 2; i++) await server.call('GET', `/conversations/${crypto.randomUUID()}`, { token })
})
const run = (args: string[], extra: Record<string, string> = {}) => live.run(['--token', token, ...args], extra)
const api = (path: string) => live.api('GET', path, undefined, token)

describe('uagent analytics', () => {
  test('dashboard: totals, success rate, top endpoints, and hourly bars that fit the terminal', async () => {
    const result = await run(['analytics', 'dashboard'], { COLUMNS: '60' })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/requests\s+\d+ total, \d+ succeeded, 2 failed/)
    expect(result.stdout).toMatch(/success rate\s+\d+\.\d%/)
    expect(result.stdout).toMatch(/^ENDPOINT\s+REQUESTS\s+AVG MS\s+ERRORS/m)
    expect(result.stdout).toMatch(/^GET \/conversations\s+5\s+\d+\s+0\.0%/m)
    expect(result.stdout).toMatch(/^GET \/conversations\/:id\s+2\s+\d+\s+100\.0%/m)
    expect(result.stdout).toMatch(/^test\/scripted\s+3\s+\d+/m)
    const bars = result.stdout.split('\n').slice(result.stdout.split('\n').indexOf('Requests by hour (UTC)') + 1).filter(Boolean)
    expect(bars).toHaveLength(24)
    for (const line of bars) {
      expect(line).toMatch(/^\d\d:00 [█ ]+ +\d+$/)
      expect(line).toHaveLength(60)
    }
    // The busiest hour's bar takes all the room left beside the labels and counts.
    const peak = Math.max(...bars.map((line) => Number(line.split(' ').at(-1))))
    const room = 60 - '00:00 '.length - ` ${peak}`.length
    expect(bars.some((line) => line.includes('█'.repeat(room)))).toBe(true)

    const json = await run(['--json', 'analytics', 'dashboard'])
    const body = JSON.parse(json.stdout)
    expect(body.requests.failed).toBe(2)
    expect(Object.keys(body).sort()).toEqual(['ai', 'feedback', 'feedbackByAssistant', 'overview', 'requests', 'usage'])
  })

  test('metrics: a sparkline per metric; --json is the API body', async () => {
    const result = await run(['analytics', 'metrics', '--range', '1h'], { COLUMNS: '50' })
    expect(result.code).toBe(0)
    const lines = result.stdout.split('\n')
    expect(lines[0]).toStartWith('1h: 60 buckets from ')
    for (const name of ['requests', 'performance', 'errors', 'users']) {
      const line = lines.find((l) => l.startsWith(`${name} `))!
      expect(line).toBeDefined()
      expect(line.length).toBeLessThanOrEqual(50)
      expect(line).toMatch(/[▁▂▃▄▅▆▇█]/)
    }
    expect(lines[lines.findIndex((l) => l.startsWith('errors ')) + 1]).toContain('total 2,')

    const one = await run(['--json', 'analytics', 'metrics', '--range', '24h', '--metric', 'errors'])
    expect(one.code).toBe(0)
    expect(JSON.parse(one.stdout)).toEqual(await api('/analytics/metrics?timeRange=24h&metric=errors'))

    const bad = await run(['analytics', 'metrics', '--range', '2h'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('error VALIDATION_ERROR:')
  })

  test('export --format csv -o FILE streams the records to the file and says how many bytes', async () => {
    const file = join(config, 'requests.csv')
    const result = await run(['analytics', 'export', '--format', 'csv', '-o', file])
    expect(result.code).toBe(0)
    const size = statSync(file).size
    expect(size).toBeGreaterThan(0)
    expect(result.stdout).toContain(`Wrote ${size.toLocaleString('en-US')} bytes (csv, 24h) to ${file}`)
    const rows = parseCsv(readFileSync(file, 'utf8'))
    expect(rows[0]).toEqual(['timestamp', 'method', 'route', 'status', 'durationMs', 'userId', 'tokens', 'model'])
    // One row per request recorded before the export: the API's export, made after it, lists
    // the same requests and then the CLI's export itself.
    const all = await api('/analytics/export?format=json')
    expect(rows.length - 1).toBe(all.findIndex((row: any) => row.route === '/analytics/export'))
    expect(rows.filter((row) => row[2] === '/chat')).toHaveLength(3)

    const json = await run(['--json', 'analytics', 'export', '--format', 'json', '--range', '1h', '-o', join(config, 'requests.json')])
    const summary = JSON.parse(json.stdout)
    expect(summary).toEqual({ file: join(config, 'requests.json'), format: 'json', timeRange: '1h', bytes: statSync(join(config, 'requests.json')).size })
    expect(Array.isArray(JSON.parse(readFileSync(join(config, 'requests.json'), 'utf8')))).toBe(true)

    const toStdout = await run(['analytics', 'export', '--format', 'csv', '--range', '1h'])
    expect(toStdout.stdout).toStartWith('timestamp,method,route,status,durationMs,userId,tokens,model\r\n')
  })

  test('a non-admin gets exit 1 with FORBIDDEN', async () => {
    const user = await server.userSession('cli-viewer@example.com')
    const result = await run(['--token', user.accessToken, 'analytics', 'dashboard'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('error FORBIDDEN:')
  })
})
