import { formOf } from '../kb/files'
import type { TestServer } from './servers'

/** Words only Alice's conversation holds: any of them in an answer to someone else is a leak. */
export const SECRETS = ['Zanzibar', 'quokka-ledger.md', 'marmalade', 'tangerine-note']

export interface ProbeResult {
  probe: string
  status: number
  leaked: boolean
}

/**
 * Alice's conversation, as rich as one gets: a reply grounded in an attached file (quokka-ledger.md),
 * her rating of it with a note, shared (or not) with `viewer`'s email.
 */
export async function aliceConversation(server: TestServer, alice: string, viewerEmail?: string) {
  const made = await server.call('POST', '/conversations', { token: alice, body: { title: 'Zanzibar budget' } })
  const id: string = made.json.id
  await server.app.handle(
    new Request(`http://localhost/conversations/${id}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
      body: formOf([['quokka-ledger.md', '# Ledger\n\nThe Zanzibar office spends its budget on marmalade and ferry tickets.\n']]),
    }),
  )
  const chat = await server.call('POST', '/chat', { token: alice, body: { message: 'What does the Zanzibar office spend its budget on?', conversationId: id } })
  const { messageId, replyId } = chat.json.metadata
  await server.call('POST', `/conversations/${id}/messages/${replyId}/feedback`, { token: alice, body: { rating: 'up', note: 'tangerine-note' } })
  if (viewerEmail) await server.call('PUT', `/conversations/${id}/access`, { token: alice, body: { shares: [{ type: 'user', email: viewerEmail, role: 'viewer' }] } })
  return { id, messageId: messageId as string, replyId: replyId as string }
}

const leakedIn = (text: string) => SECRETS.some((secret) => text.includes(secret))

/** Every conversation route that changes something, for someone who is not the owner. */
export async function probeWrites(server: TestServer, token: string, c: { id: string; messageId: string; replyId: string }): Promise<ProbeResult[]> {
  const probes: [string, () => Promise<{ status: number; text: string }>][] = [
    ['POST /chat', () => server.call('POST', '/chat', { token, body: { message: 'more', conversationId: c.id } })],
    ['POST /chat/stream', () => server.call('POST', '/chat/stream', { token, body: { message: 'more', conversationId: c.id } })],
    ['GET /stream', () => server.call('GET', `/stream?message=more&conversationId=${c.id}`, { token })],
    ['POST regenerate', () => server.call('POST', `/conversations/${c.id}/regenerate`, { token })],
    ['POST regenerate (SSE)', () => server.call('POST', `/conversations/${c.id}/regenerate`, { token, headers: { accept: 'text/event-stream' } })],
    ['PATCH message', () => server.call('PATCH', `/conversations/${c.id}/messages/${c.messageId}`, { token, body: { content: 'hijacked' } })],
    [
      'POST files',
      async () => {
        const response = await server.app.handle(new Request(`http://localhost/conversations/${c.id}/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: formOf([['evil.md', 'x']]) }))
        return { status: response.status, text: await response.text() }
      },
    ],
    ['DELETE file', () => server.call('DELETE', `/conversations/${c.id}/files/quokka-ledger.md`, { token })],
    ['PATCH title', () => server.call('PATCH', `/conversations/${c.id}`, { token, body: { title: 'mine now' } })],
    ['DELETE conversation', () => server.call('DELETE', `/conversations/${c.id}`, { token })],
    ['GET access', () => server.call('GET', `/conversations/${c.id}/access`, { token })],
    ['PUT access', () => server.call('PUT', `/conversations/${c.id}/access`, { token, body: { shares: [{ type: 'everyone', role: 'viewer' }] } })],
  ]
  const results: ProbeResult[] = []
  for (const [probe, run] of probes) {
    const { status, text } = await run()
    results.push({ probe, status, leaked: leakedIn(text) })
  }
  return results
}

/** Every conversation route that reads, for someone who is not the owner. */
export async function probeReads(server: TestServer, token: string, c: { id: string; replyId: string }): Promise<ProbeResult[]> {
  const probes: [string, () => Promise<{ status: number; text: string }>][] = [
    ['GET conversation', () => server.call('GET', `/conversations/${c.id}`, { token })],
    ['GET export markdown', () => server.call('GET', `/conversations/${c.id}/export?format=markdown`, { token })],
    ['GET export json', () => server.call('GET', `/conversations/${c.id}/export?format=json`, { token })],
    ['GET files', () => server.call('GET', `/conversations/${c.id}/files`, { token })],
    ['POST feedback', () => server.call('POST', `/conversations/${c.id}/messages/${c.replyId}/feedback`, { token, body: { rating: 'down' } })],
    ['GET feedback', () => server.call('GET', `/conversations/${c.id}/feedback`, { token })],
  ]
  const results: ProbeResult[] = []
  for (const [probe, run] of probes) {
    const { status, text } = await run()
    results.push({ probe, status, leaked: leakedIn(text) })
  }
  // Listings and search: Alice's conversation is not there.
  for (const [probe, path] of [
    ['GET /conversations', '/conversations?limit=100'],
    ['search zanzibar', '/conversations?q=zanzibar'],
    ['search marmalade', '/conversations?q=marmalade'],
  ] as const) {
    const res = await server.call('GET', path, { token })
    results.push({ probe, status: res.status, leaked: leakedIn(res.text) })
  }
  return results
}
