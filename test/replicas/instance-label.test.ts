import { expect, test } from 'bun:test'
import { makeServer } from '../helpers'

async function scrape(env: Record<string, string>) {
  const server = makeServer({ env, metricsToken: 'scrape-token-123456' })
  await server.call('GET', '/health')
  const answer = await server.call('GET', '/metrics', { token: 'scrape-token-123456' })
  expect(answer.status).toBe(200)
  return answer.text.split('\n').filter((line) => line !== '' && !line.startsWith('#'))
}

test('a named replica labels every series it exposes, the process figures too, with its instance', async () => {
  const samples = await scrape({ UAGENT_INSTANCE_ID: 'replica-"a"' })
  expect(samples.length).toBeGreaterThan(20)
  for (const line of samples) expect(line).toMatch(/^[a-zA-Z_:][\w:]*\{(?:.*,)?instance="replica-\\"a\\""\} \S+$/)
  expect(samples).toContain('uagent_http_requests_total{method="GET",route="/health",status="200",instance="replica-\\"a\\""} 1')
  expect(samples.some((line) => line.startsWith('nodejs_heap_space_size_total_bytes{space=') && line.includes(',instance="replica-'))).toBe(true)
  expect(samples.some((line) => line.startsWith('process_resident_memory_bytes{instance='))).toBe(true)
})

test('a lone server, not named, exposes its series without an instance label', async () => {
  const samples = await scrape({})
  expect(samples.some((line) => line.includes('instance='))).toBe(false)
  expect(samples).toContain('uagent_http_requests_total{method="GET",route="/health",status="200"} 1')
})
