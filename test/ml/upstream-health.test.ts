import { afterAll, describe, expect, test } from 'bun:test'
import { makeServer } from '../helpers'

// A fake OpenAI-compatible server that serves one model and counts the paths it was asked for.
const paths: string[] = []
const fake = Bun.serve({
  port: 0,
  async fetch(request) {
    const url = new URL(request.url)
    paths.push(url.pathname)
    if (url.pathname === '/v1/models') return Response.json({ data: [{ id: 'served-model' }] })
    if (url.pathname === '/v1/chat/completions') {
      const body = (await request.json()) as { model: string }
      if (body.model !== 'served-model') return Response.json({ error: 'model not found' }, { status: 404 })
      return Response.json({ choices: [{ message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })
    }
    return new Response('not found', { status: 404 })
  },
})
// A port nothing listens on.
const dead = Bun.serve({ port: 0, fetch: () => new Response('') })
const deadUrl = `http://127.0.0.1:${dead.port}`
dead.stop(true)
afterAll(() => fake.stop(true))

describe('UAGENT_LLM_URL', () => {
  for (const suffix of ['', '/v1', '/v1/']) {
    test(`works given as ${suffix || 'the bare server URL'} (never /v1/v1)`, async () => {
      paths.length = 0
      const { call, login } = makeServer({ env: { UAGENT_LLM_URL: `http://127.0.0.1:${fake.port}${suffix}`, UAGENT_LLM_MODEL: 'served-model' } })
      const health = await call('GET', '/health')
      expect(health.json.status).toBe('healthy')
      const { accessToken: token } = await login()
      const chat = await call('POST', '/chat', { token, body: { message: 'hi' } })
      expect(chat.status).toBe(200)
      expect(chat.json.response).toBe('hello')
      expect(paths).toContain('/v1/chat/completions')
      expect(paths.some((path) => path.startsWith('/v1/v1'))).toBe(false)
    })
  }

  test('an unreachable upstream: /health is degraded with the reason, chat is 503 naming the upstream', async () => {
    const { call, login } = makeServer({ env: { UAGENT_LLM_URL: deadUrl, UAGENT_LLM_MODEL: 'any' } })
    const health = await call('GET', '/health')
    expect(health.json.status).toBe('degraded')
    expect(health.json.connections.llm).toBe('unreachable')
    expect(health.json.reason).toContain(deadUrl)
    expect(health.json.reason).toContain('cannot be reached')
    const { accessToken: token } = await login()
    const chat = await call('POST', '/chat', { token, body: { message: 'hi' } })
    expect(chat.status).toBe(503)
    expect(chat.json.code).toBe('MODEL_UNAVAILABLE')
    expect(chat.json.message).toContain(deadUrl)
    expect(chat.json.message).not.toContain('ready')
  })

  test('a model the upstream does not serve: /health is degraded naming it, chat is 503 naming the upstream and the model', async () => {
    const { call, login } = makeServer({ env: { UAGENT_LLM_URL: `http://127.0.0.1:${fake.port}/v1`, UAGENT_LLM_MODEL: 'missing-model' } })
    const health = await call('GET', '/health')
    expect(health.json.status).toBe('degraded')
    expect(health.json.reason).toContain('"missing-model"')
    expect(health.json.reason).toContain('served-model')
    const { accessToken: token } = await login()
    const chat = await call('POST', '/chat', { token, body: { message: 'hi' } })
    expect(chat.status).toBe(503)
    expect(chat.json.message).toContain(`http://127.0.0.1:${fake.port}`)
    expect(chat.json.message).toContain('missing-model')
  })
})
