import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { readEventData } from '../../../src/core/sse-reader'
import { NumberedReplies, onBothBackends } from './servers'

const email = () => `${randomUUID().slice(0, 8)}@example.com`

onBothBackends('chat for every day', (make) => {
  test('messages have ids, stable across reads, in the chat answer and the conversation', async () => {
    const server = make({}, new NumberedReplies())
    const { accessToken: token } = await server.userSession(email())
    const sent = await server.call('POST', '/chat', { token, body: { message: 'first question' } })
    expect(sent.status).toBe(200)
    const { conversationId, messageId, replyId } = sent.json.metadata
    expect(messageId).toMatch(/^[0-9a-f-]{36}$/)
    expect(replyId).toMatch(/^[0-9a-f-]{36}$/)
    const read = await server.call('GET', `/conversations/${conversationId}`, { token })
    expect(read.json.messages.map((m: { id: string }) => m.id)).toEqual([messageId, replyId])
    const again = await server.call('GET', `/conversations/${conversationId}`, { token })
    expect(again.json.messages.map((m: { id: string }) => m.id)).toEqual([messageId, replyId])
    const listed = await server.call('GET', '/conversations', { token })
    expect(listed.json.conversations[0]).toMatchObject({ id: conversationId, access: 'owner', owner: { email: expect.any(String) }, messages: [{ id: messageId }, { id: replyId }] })
  })

  test('search: words of a title or a message, every word a prefix, newest first, with a match excerpt; only the caller’s', async () => {
    const server = make({}, new NumberedReplies())
    const alice = await server.userSession(email())
    const bob = await server.userSession(email())
    const say = async (token: string, message: string, conversationId?: string) =>
      (await server.call('POST', '/chat', { token, body: { message, ...(conversationId ? { conversationId } : {}) } })).json.metadata.conversationId as string
    const deploy = await say(alice.accessToken, 'When is the deploy window on Tuesday?')
    await Bun.sleep(3)
    const printer = await say(alice.accessToken, 'The printer on the third floor jams')
    await say(alice.accessToken, `${'filler words '.repeat(20)}and then the printer needs a deployment of toner ${'and more text '.repeat(20)}`, printer)
    await Bun.sleep(3)
    const other = await say(alice.accessToken, 'Lunch plans')
    await say(bob.accessToken, 'Bob also asks about the deploy window')

    const search = async (q: string, token = alice.accessToken) => server.call('GET', `/conversations?q=${encodeURIComponent(q)}&limit=10`, { token })
    const found = await search('deploy')
    expect(found.status).toBe(200)
    // "deploy" starts "deployment" too; newest activity first; Bob's is not Alice's.
    expect(found.json.conversations.map((c: { id: string }) => c.id)).toEqual([printer, deploy])
    expect(found.json).toMatchObject({ total: 2, hasMore: false })
    expect(found.json.conversations[0].match).toContain('deployment of toner')
    expect(found.json.conversations[0].match.length).toBeLessThanOrEqual(170)
    expect(found.json.conversations[0].match.startsWith('…')).toBe(true)
    expect(found.json.conversations[1].match).toBe('When is the deploy window on Tuesday?')
    // Each comes with the message that matched (the newest), not all of them.
    expect(found.json.conversations[0].messages.map((m: { content: string }) => m.content)).toEqual([expect.stringContaining('deployment of toner')])
    expect(found.json.conversations[0].messages[0].id).toMatch(/^[0-9a-f-]{36}$/)
    // Every word must be there (in one message or the title); case does not matter.
    expect((await search('DEPLOY tuesday')).json.conversations.map((c: { id: string }) => c.id)).toEqual([deploy])
    expect((await search('deploy lunch')).json.total).toBe(0)
    // The title alone (renamed) is found too.
    await server.call('PATCH', `/conversations/${other}`, { token: alice.accessToken, body: { title: 'Quarterly budget' } })
    expect((await search('budget')).json.conversations).toMatchObject([{ id: other, match: 'Quarterly budget' }])
    // Paging.
    const second = await server.call('GET', '/conversations?q=deploy&limit=1&offset=1', { token: alice.accessToken })
    expect(second.json).toMatchObject({ total: 2, hasMore: false, conversations: [{ id: deploy }] })
    // Query syntax of either backend is just words; nothing left is a 400.
    expect((await search('"deploy*" (')).json.total).toBe(2)
    for (const q of ['', '!!! ***']) {
      const bad = await search(q)
      expect(bad.status).toBe(400)
      expect(bad.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
    }
    // Bob finds his own only.
    expect((await search('deploy', bob.accessToken)).json.total).toBe(1)
    // A deleted conversation is no longer found.
    await server.call('DELETE', `/conversations/${deploy}`, { token: alice.accessToken })
    expect((await search('tuesday')).json.total).toBe(0)
  })

  test('regenerate replaces the last reply (whole or streamed); edit replaces a message, drops what followed, answers again', async () => {
    const generator = new NumberedReplies()
    const server = make({}, generator)
    const { accessToken: token } = await server.userSession(email())
    const first = await server.call('POST', '/chat', { token, body: { message: 'one' } })
    const id = first.json.metadata.conversationId
    const second = await server.call('POST', '/chat', { token, body: { message: 'two', conversationId: id } })
    expect(second.json.response).toBe('reply 2')

    const again = await server.call('POST', `/conversations/${id}/regenerate`, { token })
    expect(again.status).toBe(200)
    expect(again.json.response).toBe('reply 3')
    expect(again.json.metadata.replyId).not.toBe(second.json.metadata.replyId)
    // The model saw the question again, with the history before it (not the replaced reply).
    expect(generator.prompts.at(-1)!.map((m) => m.content).filter((c) => !c.startsWith('You are'))).toEqual(['one', 'reply 1', 'two'])
    let read = (await server.call('GET', `/conversations/${id}`, { token })).json
    expect(read.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'reply 1', 'two', 'reply 3'])
    expect(read.messages[2].id).toBe(second.json.metadata.messageId)

    // Streamed when asked.
    const response = await server.app.handle(new Request(`http://localhost/conversations/${id}/regenerate`, { method: 'POST', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }))
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events: { type: string; content?: string }[] = []
    for await (const data of readEventData(response.body!)) events.push(JSON.parse(data))
    expect(events[0]!.type).toBe('start')
    expect(events.at(-1)!.type).toBe('end')
    expect(events.filter((e) => e.type === 'chunk').map((e) => e.content).join('')).toBe('reply 4')
    read = (await server.call('GET', `/conversations/${id}`, { token })).json
    expect(read.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'reply 1', 'two', 'reply 4'])

    // Edit the first question: it keeps its id, everything after it goes, a new reply comes.
    const firstId = first.json.metadata.messageId
    const edited = await server.call('PATCH', `/conversations/${id}/messages/${firstId}`, { token, body: { content: 'one, fixed' } })
    expect(edited.status).toBe(200)
    expect(edited.json.response).toBe('reply 5')
    expect(edited.json.metadata.messageId).toBe(firstId)
    read = (await server.call('GET', `/conversations/${id}`, { token })).json
    expect(read.messages.map((m: { content: string }) => m.content)).toEqual(['one, fixed', 'reply 5'])
    expect(read.messages[0].id).toBe(firstId)
    // Found by its new words, no longer by the dropped ones.
    expect((await server.call('GET', '/conversations?q=fixed', { token })).json.total).toBe(1)
    expect((await server.call('GET', '/conversations?q=two', { token })).json.total).toBe(0)

    // Wrong targets: a reply cannot be edited (400), an unknown message is 404, a blank edit 400.
    expect((await server.call('PATCH', `/conversations/${id}/messages/${read.messages[1].id}`, { token, body: { content: 'x' } })).status).toBe(400)
    expect((await server.call('PATCH', `/conversations/${id}/messages/${randomUUID()}`, { token, body: { content: 'x' } })).status).toBe(404)
    expect((await server.call('PATCH', `/conversations/${id}/messages/${firstId}`, { token, body: { content: '   ' } })).status).toBe(400)
    // A conversation that does not end with a reply has nothing to regenerate: 409.
    const empty = await server.call('POST', '/conversations', { token, body: {} })
    expect(empty.status).toBe(201)
    const nothing = await server.call('POST', `/conversations/${empty.json.id}/regenerate`, { token })
    expect(nothing.status).toBe(409)
    expect(nothing.json).toMatchObject({ error: true, code: 'CONFLICT' })
  })

  test('feedback: one rating per user and reply, replaceable; counted in Prometheus and the dashboard per model; bad ratings 400', async () => {
    const server = make({}, new NumberedReplies())
    const admin = await server.login()
    const { accessToken: token } = await server.userSession(email())
    const sent = await server.call('POST', '/chat', { token, body: { message: 'rate me' } })
    const { conversationId: id, replyId, messageId } = sent.json.metadata
    const rate = (body: unknown, target = replyId) => server.call('POST', `/conversations/${id}/messages/${target}/feedback`, { token, body })
    const up = await rate({ rating: 'up', note: 'helpful' })
    expect(up.status).toBe(200)
    expect(up.json).toEqual({ success: true, messageId: replyId, rating: 'up', note: 'helpful', model: 'test/numbered' })
    expect((await server.call('GET', `/conversations/${id}/feedback`, { token })).json).toEqual({ ratings: { [replyId]: { rating: 'up', note: 'helpful' } } })
    // A second rating replaces the first.
    expect((await rate({ rating: 'down' })).status).toBe(200)
    expect((await server.call('GET', `/conversations/${id}/feedback`, { token })).json).toEqual({ ratings: { [replyId]: { rating: 'down', note: null } } })
    for (const body of [{ rating: 'meh' }, { rating: 5 }, {}, { rating: 'up', note: 'x'.repeat(2001) }]) {
      const bad = await rate(body)
      expect(bad.status).toBe(400)
      expect(bad.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
    }
    expect((await rate({ rating: 'up' }, messageId)).status).toBe(400)
    expect((await rate({ rating: 'up' }, randomUUID())).status).toBe(404)

    const metrics = await server.call('GET', '/metrics', { token: admin.accessToken })
    expect(metrics.text).toMatch(/uagent_feedback_total\{rating="up",model="test\/numbered"[^}]*\} 1/)
    expect(metrics.text).toMatch(/uagent_feedback_total\{rating="down",model="test\/numbered"[^}]*\} 1/)
    const dashboard = await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })
    expect(dashboard.json.feedback).toEqual([{ model: 'test/numbered', up: 0, down: 1, upShare: 0 }])
    expect(dashboard.json.feedbackByAssistant).toEqual([])

    // Replies of an assistant are counted for it too.
    const made = await server.call('POST', '/assistants', { token, body: { name: 'helper', instructions: 'Be brief.' } })
    expect(made.status).toBe(201)
    for (const rating of ['up', 'up', 'down']) {
      const reply = await server.call('POST', '/chat', { token, body: { message: 'help me', assistant: 'helper' } })
      expect(reply.json.metadata.assistant).toEqual({ id: made.json.id, name: 'helper' })
      expect((await server.call('POST', `/conversations/${reply.json.metadata.conversationId}/messages/${reply.json.metadata.replyId}/feedback`, { token, body: { rating } })).status).toBe(200)
    }
    const after = await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })
    expect(after.json.feedbackByAssistant).toEqual([{ assistant: { id: made.json.id, name: 'helper' }, up: 2, down: 1, upShare: 0.667 }])
    expect(after.json.feedback).toEqual([{ model: 'test/numbered', up: 2, down: 2, upShare: 0.5 }])
  })

  test('export: Markdown with the sources as footnotes, or JSON; a download name; another user 404', async () => {
    const server = make({}, new NumberedReplies())
    const { accessToken: token } = await server.userSession(email())
    const other = await server.userSession(email())
    const sent = await server.call('POST', '/chat', { token, body: { message: 'Zürich: where to eat?' } })
    const id = sent.json.metadata.conversationId
    const markdown = await server.call('GET', `/conversations/${id}/export?format=markdown`, { token })
    expect(markdown.status).toBe(200)
    expect(markdown.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
    expect(markdown.headers.get('content-disposition')).toBe(`attachment; filename="zurich-where-to-eat.md"; filename*=UTF-8''zurich-where-to-eat.md`)
    expect(markdown.text).toStartWith('# Zürich: where to eat?\n')
    expect(markdown.text).toContain('## You · ')
    expect(markdown.text).toContain('## Assistant (test/numbered) · ')
    expect(markdown.text).toContain('reply 1')
    const json = await server.call('GET', `/conversations/${id}/export?format=json`, { token })
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(json.headers.get('content-disposition')).toContain('zurich-where-to-eat.json')
    expect(json.json).toMatchObject({ id, title: 'Zürich: where to eat?', messages: [{ role: 'user' }, { role: 'assistant', metadata: { model: 'test/numbered' } }], exportedAt: expect.any(String) })
    expect((await server.call('GET', `/conversations/${id}/export`, { token })).headers.get('content-type')).toBe('text/markdown; charset=utf-8')
    expect((await server.call('GET', `/conversations/${id}/export?format=pdf`, { token })).status).toBe(400)
    const theirs = await server.call('GET', `/conversations/${id}/export`, { token: other.accessToken })
    expect(theirs.status).toBe(404)
    expect(theirs.text).not.toContain('Zürich')
  })
})
