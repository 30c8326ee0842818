import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeServer, tempDir } from '../helpers'
import { echoModel } from '../modules/assistants/echo'
import { HANDBOOK, INSTRUCTIONS, QUESTION } from '../modules/assistants/probes'
import { liveServer } from './live-server'

setDefaultTimeout(60_000)

const model = echoModel()
afterAll(() => model.stop())
const server = makeServer({ llmUrl: model.url, llmModel: 'echo-model' })
const live = liveServer(server.app, { login: true })

describe('uagent assistants … and uagent chat --assistant', () => {
  test('create (instructions from a file), list, show, edit, share --collections, access, chat as it (streamed and whole), unshare, delete', async () => {
    const bob = await server.userSession('bob@example.com')
    expect((await live.request('POST', '/rag/ingest', { collection: 'handbook', documents: HANDBOOK })).status).toBe(200)
    const prompt = join(tempDir('assistant-cli'), 'prompt.txt')
    writeFileSync(prompt, INSTRUCTIONS)
    const made = await live.run(['assistants', 'create', 'HR helper', '--instructions-file', prompt, '--collection', 'handbook', '--starter', 'How many days of leave?', '--description', 'HR answers'])
    expect(made.code).toBe(0)
    expect(made.stdout).toContain('Made assistant HR helper')
    const json = JSON.parse((await live.run(['--json', 'assistants', 'show', 'HR helper'])).stdout)
    expect(json).toEqual(await live.api('GET', '/assistants/HR%20helper'))
    expect(json.instructions).toBe(INSTRUCTIONS)
    const listed = await live.run(['assistants', 'list'])
    expect(listed.stdout).toMatch(/HR helper\s+admin@example\.com\s+owner\s+1/)
    expect(listed.stdout).toContain('researcher')
    expect((await live.run(['assistants', 'edit', 'HR helper', '--temperature', '0.3'])).code).toBe(0)
    expect((await live.api('GET', '/assistants/HR%20helper')).temperature).toBe(0.3)
    expect((await live.run(['assistants', 'edit', 'HR helper'])).code).toBe(2)

    const shared = await live.run(['assistants', 'share', 'HR helper', '--user', 'bob@example.com', '--role', 'viewer', '--collections'])
    expect(shared.code).toBe(0)
    expect(shared.stdout).toContain('Its collections shared too: admin@example.com/handbook')
    expect((await live.run(['assistants', 'access', 'HR helper'])).stdout).toMatch(/user\s+bob@example\.com\s+viewer/)

    // Bob chats as it: the echo model shows the instructions and the handbook's passage reached it.
    const env = { UAGENT_TOKEN: bob.accessToken }
    const streamed = await live.run(['chat', '--assistant', 'admin@example.com/HR helper', QUESTION], env)
    expect(streamed.code).toBe(0)
    expect(streamed.stdout).toContain('marigold')
    expect(streamed.stdout).toContain('periwinkle')
    expect(streamed.stderr).toContain('[HR helper]')
    const whole = await live.run(['--json', 'chat', '--no-stream', '--assistant', 'HR helper', QUESTION], env)
    const body = JSON.parse(whole.stdout)
    expect(body.metadata.assistant.name).toBe('HR helper')
    expect(body.response).toContain('periwinkle')

    expect((await live.run(['assistants', 'unshare', 'HR helper', '--user', 'bob@example.com'])).stdout).toContain('no longer has access')
    const refused = await live.run(['chat', '--assistant', 'HR helper', QUESTION], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('NOT_FOUND')
    expect((await live.run(['assistants', 'delete', 'HR helper'])).code).toBe(0)
    expect((await live.run(['assistants', 'show', 'HR helper'])).code).toBe(1)
  })
})
