import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type makeServer, openSocket } from '../../helpers'

export type Server = Pick<ReturnType<typeof makeServer>, 'app' | 'call'>

/** The handbook every scenario shares: each passage holds a word found nowhere else (what a leak would show). */
export const SECRET = 'periwinkle'
export const HANDBOOK = [
  { id: 'vault', content: `The vault code word is ${SECRET} and it changes every quarter. Staff ask the office manager for it.`, metadata: { title: `Vault ${SECRET}` } },
  { id: 'parking', content: `Parking permits for the ${SECRET} garage are renewed each January at the front desk.`, metadata: { title: `Parking ${SECRET}` } },
]
export const QUESTION = 'What is the vault code word?'

/** One surface's answer to a probe: its status, and whether the secret word came back in it. */
export interface ProbeResult {
  surface: string
  status: number
  /** The handbook's secret word appears in what came back. */
  sees: boolean
  code?: string
}

const holds = (value: unknown) => JSON.stringify(value ?? '').toLowerCase().includes(SECRET)

/** The SDK's MCP client over Streamable HTTP, answered in-process. */
export async function mcpClient(server: Server, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: (url, init) => server.app.handle(new Request(url, init)),
  })
  const client = new Client({ name: 'shares-probe', version: '1.0.0' })
  await client.connect(transport)
  return client
}

/** stream_chat over a real WebSocket: the chat_response (or error) for one message. */
export async function socketChat(port: number, token: string, collection: string): Promise<{ type: string; code?: string; data?: any }> {
  const { socket, next } = await openSocket(`ws://127.0.0.1:${port}/ws`)
  try {
    socket.send(JSON.stringify({ type: 'auth', token }))
    await next('auth_success')
    socket.send(JSON.stringify({ type: 'stream_chat', message: QUESTION, collection, id: 1 }))
    return await next('chat_response')
  } finally {
    socket.close()
  }
}

/**
 * Every surface that reads a collection, asked about `ref` with `token`: search, answer, chat
 * grounding (/chat, /chat/stream, /stream, WebSocket when `port` is given), the documents routes,
 * the listing, /v1 (rag: model and its model list), the knowledge plugin, MCP (rag_search,
 * rag_answer, list_collections, resources), agents (a task's collections) and the access list.
 */
export async function probeAll(server: Server, token: string, ref: string, target: { id: string; qualified: string }, port?: number): Promise<ProbeResult[]> {
  const results: ProbeResult[] = []
  const path = encodeURIComponent(ref)
  // A listing gives the collection away by naming it: its id or its qualified name.
  const named = (text: string) => holds(text) || text.includes(target.id) || text.includes(target.qualified)
  const http = async (surface: string, method: string, url: string, body?: unknown, listing = false) => {
    const res = await server.call(method, url, { token, body })
    results.push({ surface, status: res.status, sees: listing ? named(res.text) : holds(res.text), code: res.json?.code })
  }
  await http('search', 'POST', '/rag/search', { collection: ref, query: QUESTION, limit: 5 })
  await http('answer', 'POST', '/rag/answer', { collection: ref, question: QUESTION })
  await http('chat', 'POST', '/chat', { message: QUESTION, collection: ref })
  await http('chat/stream', 'POST', '/chat/stream', { message: QUESTION, collection: ref })
  await http('stream', 'GET', `/stream?message=${encodeURIComponent(QUESTION)}&collection=${path}`)
  await http('documents', 'GET', `/rag/collections/${path}/documents`)
  await http('document', 'GET', `/rag/collections/${path}/documents/vault`)
  await http('knowledge plugin', 'POST', '/plugins/knowledge/execute', { action: 'search', parameters: { collection: ref, query: QUESTION } })
  await http('v1 rag model', 'POST', '/v1/chat/completions', { model: `rag:${ref}`, messages: [{ role: 'user', content: QUESTION }] })
  await http('agents', 'POST', '/agents/execute', { task: 'Summarise the vault rules', agents: ['researcher'], collections: [ref] })
  await http('access list', 'GET', `/rag/collections/${path}/access`)
  // Listings: 200 for everyone; a leak is the collection (or its documents) listed.
  await http('collections list', 'GET', '/rag/collections', undefined, true)
  await http('v1 models', 'GET', '/v1/models', undefined, true)
  const client = await mcpClient(server, token)
  try {
    for (const [surface, name, args] of [
      ['mcp rag_search', 'rag_search', { collection: ref, query: QUESTION }],
      ['mcp rag_answer', 'rag_answer', { collection: ref, question: QUESTION }],
    ] as const) {
      const result: any = await client.callTool({ name, arguments: args })
      results.push({ surface, status: result.isError ? 404 : 200, sees: holds(result.structuredContent ?? result.content) })
    }
    const listed: any = await client.callTool({ name: 'list_collections', arguments: {} })
    results.push({ surface: 'mcp list_collections', status: 200, sees: named(JSON.stringify(listed)) })
    const resources = await client.listResources()
    results.push({ surface: 'mcp resources', status: 200, sees: resources.resources.some((r) => r.name.endsWith('/vault') || r.name.endsWith('/parking')) })
  } finally {
    await client.close()
  }
  if (port !== undefined) {
    const reply = await socketChat(port, token, ref)
    results.push({ surface: 'websocket', status: reply.type === 'error' ? (reply.code === 'NOT_FOUND' ? 404 : reply.code === 'FORBIDDEN' ? 403 : 400) : 200, sees: holds(reply.data), code: reply.code })
  }
  return results
}

/** The probes that gave anything away: the secret seen, or a status other than 404 on a surface that names the collection. */
export function leaks(results: ProbeResult[]): ProbeResult[] {
  const listings = new Set(['collections list', 'v1 models', 'mcp list_collections', 'mcp resources'])
  return results.filter((r) => r.sees || (!listings.has(r.surface) && r.status !== 404))
}

/** The probes a reader should pass and did not: a non-200, or the secret not seen where a reader sees it. */
export function misses(results: ProbeResult[]): ProbeResult[] {
  // The access list is for managers (a viewer gets 403); the agents' run and the single document
  // need not quote the vault passage; the listings show names, not text (resources list document names).
  const readerSees = new Set(['search', 'answer', 'chat', 'chat/stream', 'stream', 'documents', 'document', 'knowledge plugin', 'v1 rag model', 'mcp rag_search', 'mcp rag_answer', 'mcp resources', 'mcp list_collections', 'collections list', 'v1 models', 'websocket'])
  return results.filter((r) => (r.surface === 'access list' ? r.status !== 403 : r.status !== 200) || (readerSees.has(r.surface) && !r.sees))
}

type Session = { accessToken: string; user: { id: string } }

/**
 * Alice's handbook shared with the group "staff" (Bob is in it) as viewers; Carol is in no group.
 * Made through the API of `server`, as a team would.
 */
export async function shareHandbook(server: Server & { login(): Promise<Session>; userSession(email: string): Promise<Session> }) {
  const admin = (await server.login()).accessToken
  const alice = await server.userSession('alice@example.com')
  const bob = await server.userSession('bob@example.com')
  const carol = await server.userSession('carol@example.com')
  const ingested = await server.call('POST', '/rag/ingest', { token: alice.accessToken, body: { collection: 'handbook', documents: HANDBOOK } })
  if (ingested.status !== 200) throw new Error(`ingest: ${ingested.status} ${ingested.text}`)
  const group = await server.call('POST', '/groups', { token: admin, body: { name: 'staff' } })
  if (group.status !== 201) throw new Error(`group: ${group.status} ${group.text}`)
  const member = await server.call('POST', `/groups/${group.json.id}/members`, { token: admin, body: { email: 'bob@example.com' } })
  if (member.status !== 200) throw new Error(`member: ${member.status} ${member.text}`)
  const shared = await server.call('PUT', '/rag/collections/handbook/access', { token: alice.accessToken, body: { shares: [{ type: 'group', name: 'staff', role: 'viewer' }] } })
  if (shared.status !== 200) throw new Error(`share: ${shared.status} ${shared.text}`)
  const listed = await server.call('GET', '/rag/collections', { token: alice.accessToken })
  const id = listed.json.collections[0].id as string
  return { admin, alice, bob, carol, group: group.json as { id: string }, id, target: { id, qualified: 'alice@example.com/handbook' } }
}
