import { mcpClient, type Server } from '../shares/probes'
import { openSocket } from '../../helpers'

/** A word only the HR helper's instructions hold, and one only the handbook's passages hold. */
export const INSTRUCTION = 'marigold'
export const SECRET = 'periwinkle'
export const INSTRUCTIONS = `You are the ${INSTRUCTION} HR helper of Example Ltd. Answer from the staff documents, politely, and cite them.`
export const HANDBOOK = [
  { id: 'vault', content: `The vault code word is ${SECRET} and it changes every quarter. Staff ask the office manager for it.`, metadata: { title: 'Vault' } },
  { id: 'leave', content: `Annual leave is 28 days; the ${SECRET} form goes to your manager two weeks ahead.`, metadata: { title: 'Leave' } },
]
export const QUESTION = 'What is the vault code word?'

export interface Seen {
  surface: string
  status: number
  /** The reply holds the assistant's instructions. */
  instructions: boolean
  /** The reply holds the handbook's text. */
  passages: boolean
  code?: string
  text: string
}

const has = (text: string, word: string) => text.toLowerCase().includes(word)

/**
 * Every surface that answers as an assistant, asked with `token` as `ref`: POST /chat,
 * POST /chat/stream, GET /stream, the WebSocket (with `port`), /v1/chat/completions
 * (`assistant:<ref>`, whole and streamed), MCP ask_assistant, an agent task (`assistant:<ref>`),
 * and GET /assistants/{ref}.
 */
export async function probeAssistant(server: Server, token: string, ref: string, port?: number): Promise<Seen[]> {
  const seen: Seen[] = []
  const push = (surface: string, status: number, text: string, code?: string) =>
    seen.push({ surface, status, text, code, instructions: has(text, INSTRUCTION), passages: has(text, SECRET) })
  const http = async (surface: string, method: string, url: string, body?: unknown) => {
    const res = await server.call(method, url, { token, body })
    push(surface, res.status, res.text, res.json?.code)
  }
  await http('chat', 'POST', '/chat', { message: QUESTION, assistant: ref })
  await http('chat/stream', 'POST', '/chat/stream', { message: QUESTION, assistant: ref })
  await http('stream', 'GET', `/stream?message=${encodeURIComponent(QUESTION)}&assistant=${encodeURIComponent(ref)}`)
  await http('v1', 'POST', '/v1/chat/completions', { model: `assistant:${ref}`, messages: [{ role: 'user', content: QUESTION }] })
  await http('v1 stream', 'POST', '/v1/chat/completions', { model: `assistant:${ref}`, stream: true, messages: [{ role: 'user', content: QUESTION }] })
  await http('agents', 'POST', '/agents/execute', { task: QUESTION, agents: [`assistant:${ref}`] })
  await http('show', 'GET', `/assistants/${encodeURIComponent(ref)}`)
  const client = await mcpClient(server, token)
  try {
    const result: any = await client.callTool({ name: 'ask_assistant', arguments: { assistant: ref, question: QUESTION } })
    push('mcp ask_assistant', result.isError ? 404 : 200, JSON.stringify(result.structuredContent ?? result.content))
  } finally {
    await client.close()
  }
  if (port !== undefined) {
    const { socket, next } = await openSocket(`ws://127.0.0.1:${port}/ws`)
    try {
      socket.send(JSON.stringify({ type: 'auth', token }))
      await next('auth_success')
      socket.send(JSON.stringify({ type: 'stream_chat', message: QUESTION, assistant: ref, id: 1 }))
      const reply = await next('chat_response')
      push('websocket', reply.type === 'error' ? (reply.code === 'NOT_FOUND' ? 404 : 400) : 200, JSON.stringify(reply.data ?? reply), reply.code)
    } finally {
      socket.close()
    }
  }
  return seen
}

/** Surfaces that answer (not GET /assistants/{ref}, which shows the instructions, not a reply). */
export const ANSWERS = new Set(['chat', 'chat/stream', 'stream', 'v1', 'v1 stream', 'agents', 'mcp ask_assistant', 'websocket'])

/** The probes where anything came back to someone without access: not a 404, or a secret word. */
export function leaks(seen: Seen[]): Seen[] {
  return seen.filter((s) => s.status !== 404 || s.instructions || s.passages)
}

/**
 * The Alice/Bob/Carol team: Alice's handbook and her "HR helper" (instructions and the handbook);
 * the group staff (Bob) may use it (`shareCollections` also shares the handbook); Carol is in no group.
 */
export async function hrTeam(server: Server & { login(): Promise<{ accessToken: string }>; userSession(email: string): Promise<{ accessToken: string; user: { id: string } }> }, shareCollections = true) {
  const admin = (await server.login()).accessToken
  const alice = await server.userSession('alice@example.com')
  const bob = await server.userSession('bob@example.com')
  const carol = await server.userSession('carol@example.com')
  const must = (what: string, res: { status: number; text: string }, status = 200) => {
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`)
    return res
  }
  must('ingest', await server.call('POST', '/rag/ingest', { token: alice.accessToken, body: { collection: 'handbook', documents: HANDBOOK } }))
  const group = must('group', await server.call('POST', '/groups', { token: admin, body: { name: 'staff' } }), 201)
  must('member', await server.call('POST', `/groups/${(group as any).json.id}/members`, { token: admin, body: { email: 'bob@example.com' } }))
  const made = must(
    'assistant',
    await server.call('POST', '/assistants', {
      token: alice.accessToken,
      body: { name: 'HR helper', description: 'Answers HR questions', instructions: INSTRUCTIONS, collections: ['handbook'], starters: ['How many days of leave do I have?'], temperature: 0.2 },
    }),
    201,
  )
  must('share', await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [{ type: 'group', name: 'staff', role: 'viewer' }], shareCollections } }))
  return { admin, alice, bob, carol, group: (group as any).json as { id: string }, assistant: (made as any).json as { id: string; name: string } }
}
