import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { makeServer } from '../../helpers'
import { mcpClient } from '../shares/probes'
import { echoModel } from './echo'
import { ANSWERS, hrTeam, INSTRUCTION, leaks, probeAssistant, QUESTION, SECRET } from './probes'

setDefaultTimeout(120_000)

const model = echoModel()
const listening: { stop(): void }[] = []
afterAll(() => {
  listening.forEach((app) => app.stop())
  model.stop()
})

async function team(shareCollections = true) {
  const server = makeServer({ llmUrl: model.url, llmModel: 'echo-model' })
  const made = await hrTeam(server, shareCollections)
  const app = server.app.listen({ port: 0 })
  listening.push(app)
  return { server, ...made, port: app.server!.port! }
}

describe('assistants on every surface (SQLite, a model that echoes its prompt)', () => {
  test('a group member gets the assistant on every surface: its instructions and its collection passages reach the model; an outsider gets 404 and nothing', async () => {
    const { server, bob, carol, assistant, port } = await team()
    for (const ref of ['HR helper', assistant.id, 'alice@example.com/HR helper']) {
      const seen = await probeAssistant(server, bob.accessToken, ref, ref === 'HR helper' ? port : undefined)
      expect(seen.filter((s) => s.status !== 200).map((s) => `${s.surface} ${s.status} ${s.text.slice(0, 200)}`)).toEqual([])
      expect(seen.filter((s) => ANSWERS.has(s.surface) && !(s.instructions && s.passages)).map((s) => `${s.surface}: ${s.text.slice(0, 300)}`)).toEqual([])
      const outsider = await probeAssistant(server, carol.accessToken, ref, ref === 'HR helper' ? port : undefined)
      expect(leaks(outsider).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    }
    // The reply names the assistant; the conversation keeps it.
    const chat = await server.call('POST', '/chat', { token: bob.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })
    expect(chat.json.metadata.assistant).toEqual({ id: assistant.id, name: 'HR helper' })
    expect(chat.json.metadata.collectionsSkipped).toBe(0)
    expect(chat.json.metadata.sources.map((s: { id: string }) => s.id)).toContain('vault')
    const id = chat.json.metadata.conversationId
    const next = await server.call('POST', '/chat', { token: bob.accessToken, body: { message: 'And who changes it?', conversationId: id } })
    expect(next.json.metadata.assistant).toEqual({ id: assistant.id, name: 'HR helper' })
    expect(next.json.response).toContain(INSTRUCTION)
    const conversation = await server.call('GET', `/conversations/${id}`, { token: bob.accessToken })
    expect(conversation.json.assistant).toEqual({ id: assistant.id, name: 'HR helper' })
    // Regenerating its last reply answers as it again (issue 57's regenerate keeps the conversation's assistant).
    const again = await server.call('POST', `/conversations/${id}/regenerate`, { token: bob.accessToken })
    expect(again.status).toBe(200)
    expect(again.json.metadata.assistant).toEqual({ id: assistant.id, name: 'HR helper' })
    expect(again.json.response).toContain(INSTRUCTION)
    // Another assistant in the same conversation is refused.
    const other = await server.call('POST', '/chat', { token: bob.accessToken, body: { message: 'hi', conversationId: id, assistant: 'researcher' } })
    expect(other.status).toBe(400)
    // Its temperature reached the model.
    expect(model.seen.some((request) => request.temperature === 0.2)).toBe(true)
    // MCP's agents_run takes it as an agent too; Carol's is refused without a word of it.
    for (const [token, ok] of [[bob.accessToken, true], [carol.accessToken, false]] as const) {
      const client = await mcpClient(server, token)
      const ran: any = await client.callTool({ name: 'agents_run', arguments: { task: QUESTION, agents: ['assistant:alice@example.com/HR helper'] } })
      await client.close()
      const text = JSON.stringify(ran.structuredContent ?? ran.content)
      expect(ran.isError === true).toBe(!ok)
      expect(text.includes(INSTRUCTION) && text.includes(SECRET)).toBe(ok)
      if (!ok) expect(text).not.toContain(INSTRUCTION)
    }
    // /v1 lists the passages it was given, as rag: models do.
    const v1 = await server.call('POST', '/v1/chat/completions', { token: bob.accessToken, body: { model: 'assistant:alice@example.com/HR helper', messages: [{ role: 'user', content: QUESTION }] } })
    expect(v1.json.sources.map((s: { id: string }) => s.id)).toContain('vault')
    // The stream's start event names it.
    const stream = await server.call('GET', `/stream?message=${encodeURIComponent(QUESTION)}&assistant=HR%20helper`, { token: bob.accessToken })
    const start = JSON.parse(stream.text.split('\n').find((line) => line.startsWith('data: '))!.slice(6))
    expect(start).toMatchObject({ type: 'start', assistant: { id: assistant.id, name: 'HR helper' }, collectionsSkipped: 0 })
  })

  test('a shared assistant whose collection is not shared: its instructions, none of the collection, and collectionsSkipped counts it', async () => {
    const { server, bob, port } = await team(false)
    const seen = await probeAssistant(server, bob.accessToken, 'HR helper', port)
    expect(seen.filter((s) => s.status !== 200).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    expect(seen.filter((s) => s.passages).map((s) => s.surface)).toEqual([])
    expect(seen.filter((s) => ANSWERS.has(s.surface) && s.surface !== 'agents' && !s.instructions).map((s) => s.surface)).toEqual([])
    const chat = await server.call('POST', '/chat', { token: bob.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })
    expect(chat.json.metadata.collectionsSkipped).toBe(1)
    expect(chat.text).not.toContain(SECRET)
    expect(chat.text).not.toContain('handbook')
    const shown = await server.call('GET', '/assistants/HR%20helper', { token: bob.accessToken })
    expect(shown.json.collections).toEqual([])
    expect(shown.json.collectionsHidden).toBe(1)
    expect(shown.text).not.toContain('handbook')
  })
})
