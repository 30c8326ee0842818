import { expect, test } from 'bun:test'
import { join } from 'node:path'

// The README's plain `bun test` (no --timeout) gives every test file the suite's timeout, not only
// the first one of the run (see test/setup.ts): two files whose test outlasts Bun's 5 s default,
// run as a newcomer would, without CI's variables.
test('a plain `bun test` gives the second file of a run the suite’s timeout too', async () => {
  const root = join(import.meta.dir, '..')
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) env[key] = value
  const run = Bun.spawn(['bun', 'test', './test/fixtures/timeout/'], { cwd: root, env: { ...env, UAGENT_TIMEOUT_PROBE: '1' }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
  const output = stdout + stderr
  expect(output).not.toContain('timed out')
  expect(output).toMatch(/\b2 pass\b/)
  expect(output).toMatch(/\b0 fail\b/)
  expect(code).toBe(0)
}, 60_000)
