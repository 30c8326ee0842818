import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeServer } from '../helpers'
import { tempDir } from '../temp'
import { liveServer } from './live-server'

setDefaultTimeout(60_000)

const dataDir = tempDir('cli-conversations')
const server = makeServer({ dataDir })
const live = liveServer(server.app, { login: true })
const files = tempDir('cli-conversation-files')

const VPN = 'Connect to the office VPN with the client called Tunnelblick before opening any internal site.\n'

describe('uagent chat --file | conversations search | regenerate | edit | rate | ratings | export | files | attach | detach | new', () => {
  test('a file attached from the command line grounds the reply; the conversation is found, regenerated, edited, rated and exported', async () => {
    const guide = join(files, 'vpn-guide.md')
    writeFileSync(guide, `# Reaching internal sites\n\n${VPN}`)
    const chat = await live.run(['--json', 'chat', '--file', guide, 'Which VPN client do I need for internal sites?'])
    expect(chat.code).toBe(0)
    const reply = JSON.parse(chat.stdout)
    expect(reply.metadata.sources[0]).toMatchObject({ title: 'vpn-guide.md', file: true })
    const id: string = reply.metadata.conversationId

    const listedFiles = await live.run(['--json', 'conversations', 'files', id.slice(0, 8)])
    expect(JSON.parse(listedFiles.stdout)).toEqual(await live.api('GET', `/conversations/${id}/files`))
    expect((await live.run(['conversations', 'files', id])).stdout).toMatch(/vpn-guide\.md\s+ready/)

    const found = await live.run(['--json', 'conversations', 'search', 'tunnelblick'])
    expect(JSON.parse(found.stdout)).toMatchObject({ total: 1, conversations: [{ id }] })
    const human = await live.run(['conversations', 'search', 'vpn', 'client'])
    expect(human.stdout).toContain(id)
    expect((await live.run(['conversations', 'search', '!!!'])).code).toBe(1)

    const regenerated = await live.run(['--json', 'conversations', 'regenerate', id.slice(0, 8)])
    expect(regenerated.code).toBe(0)
    const again = JSON.parse(regenerated.stdout)
    expect(again.metadata.replyId).not.toBe(reply.metadata.replyId)
    const streamed = await live.run(['conversations', 'regenerate', id])
    expect(streamed.code).toBe(0)
    expect(streamed.stdout).toContain('Tunnelblick')

    const edited = await live.run(['--json', 'conversations', 'edit', id, reply.metadata.messageId, 'Which', 'VPN', 'client', 'opens', 'internal', 'sites?'])
    expect(edited.code).toBe(0)
    const conversation = await live.api('GET', `/conversations/${id}`)
    expect(conversation.messages.map((m: { content: string }) => m.content)[0]).toBe('Which VPN client opens internal sites?')
    const replyId = JSON.parse(edited.stdout).metadata.replyId
    expect(conversation.messages[1].id).toBe(replyId)

    const rated = await live.run(['conversations', 'rate', id, replyId, 'up', '--note', 'clear'])
    expect(rated.code).toBe(0)
    expect(rated.stdout).toContain(`Rated ${replyId} up`)
    expect((await live.run(['conversations', 'rate', id, replyId, 'sideways'])).code).toBe(1)
    expect(JSON.parse((await live.run(['--json', 'conversations', 'ratings', id])).stdout)).toEqual({ ratings: { [replyId]: { rating: 'up', note: 'clear' } } })

    const markdown = join(files, 'out.md')
    const exported = await live.run(['conversations', 'export', id, '-o', markdown])
    expect(exported.code).toBe(0)
    expect(readFileSync(markdown, 'utf8')).toStartWith('# Which VPN client do I need for internal sites?')
    expect(readFileSync(markdown, 'utf8')).toContain('vpn-guide.md, a file of this conversation')
    const json = await live.run(['conversations', 'export', id, '--format', 'json'])
    expect(JSON.parse(json.stdout)).toMatchObject({ id, messages: [{ content: 'Which VPN client opens internal sites?' }, { role: 'assistant' }] })

    expect((await live.run(['conversations', 'detach', id, 'vpn-guide.md'])).code).toBe(0)
    expect((await live.api('GET', `/conversations/${id}/files`)).files).toEqual([])
    expect((await live.run(['conversations', 'attach', id, join(files, 'missing.md')])).code).toBe(2)
    expect((await live.run(['conversations', 'attach', id, guide])).stdout).toMatch(/vpn-guide\.md\s+ready/)
  })

  test('new: an empty conversation, titled or not', async () => {
    const made = await live.run(['--json', 'conversations', 'new', '--title', 'Contract review'])
    expect(JSON.parse(made.stdout)).toMatchObject({ title: 'Contract review', messages: [] })
    const plain = await live.run(['conversations', 'new'])
    expect(plain.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/)
  })

  test('share, access, unshare: a viewer reads and exports from the CLI, cannot post (exit 1, FORBIDDEN); unshared, the next command is 404', async () => {
    const bob = await server.userSession('viewer.bob@example.com')
    const id = (await live.api('POST', '/chat', { message: 'Quarterly numbers for the harbour project' })).metadata.conversationId
    const shared = await live.run(['conversations', 'share', id.slice(0, 8), '--user', 'viewer.bob@example.com'])
    expect(shared.code).toBe(0)
    expect(shared.stdout).toContain(`link: /app/c/${id}`)
    expect(JSON.parse((await live.run(['--json', 'conversations', 'access', id])).stdout)).toEqual(await live.api('GET', `/conversations/${id}/access`))
    expect((await live.run(['conversations', 'access', id])).stdout).toMatch(/user\s+viewer\.bob@example\.com\s+viewer/)
    const asBob = { UAGENT_TOKEN: bob.accessToken }
    const found = await live.run(['--json', 'conversations', 'search', 'harbour'], asBob)
    expect(JSON.parse(found.stdout)).toMatchObject({ total: 1, conversations: [{ id, access: 'viewer', owner: { email: 'admin@example.com' } }] })
    expect((await live.run(['conversations', 'export', id], asBob)).stdout).toContain('# Quarterly numbers for the harbour project')
    const post = await live.run(['chat', '--no-stream', '--conversation', id, 'more please'], asBob)
    expect(post.code).toBe(1)
    expect(post.stderr).toContain('FORBIDDEN')
    expect((await live.run(['conversations', 'unshare', id, '--user', 'viewer.bob@example.com'])).stdout).toContain('can no longer read')
    const gone = await live.run(['conversations', 'show', id], asBob)
    expect(gone.code).toBe(1)
  })
})
