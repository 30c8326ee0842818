// `uagent mcp`: the server's MCP endpoint offered over stdio, for clients that start a command.
// Each JSON-RPC message read from stdin is POSTed to the running server's /mcp with the CLI's
// credentials (refreshed when they expire); what comes back, JSON or an event stream of progress
// notifications and the response, is written to stdout. Nothing else ever goes to stdout.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { Readable, Writable } from 'node:stream'
import { readEventData } from '../src/core/sse-reader'
import type { ApiClient } from './client'

type Message = JSONRPCMessage & { id?: string | number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown> }

/** Relays until stdin ends and every request read has its answer; resolves then. */
export async function relayMcp(client: ApiClient, input: Readable = process.stdin, output: Writable = process.stdout, log = (line: string) => process.stderr.write(`${line}\n`)): Promise<void> {
  const stdio = new StdioServerTransport(input, output)
  const inflight = new Map<string | number, AbortController>()
  let protocolVersion: string | undefined

  const reply = (message: JSONRPCMessage) => stdio.send(message).catch(() => {})

  async function forward(message: Message): Promise<void> {
    // A request the client gave up on: the server is told (it stops the work), and its answer is no longer awaited.
    if (message.method === 'notifications/cancelled') inflight.get(message.params?.requestId as string | number)?.abort()
    const isRequest = message.method !== undefined && message.id !== undefined
    const controller = new AbortController()
    if (isRequest) inflight.set(message.id!, controller)
    try {
      const response = await client.fetch('/mcp', {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          ...(protocolVersion ? { 'mcp-protocol-version': protocolVersion } : {}),
        },
        body: JSON.stringify(message),
        signal: controller.signal,
      })
      if (response.status === 202 || !response.body) return
      const answers: Message[] = []
      if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
        for await (const data of readEventData(response.body)) {
          if (!data.trim()) continue
          const answer = JSON.parse(data) as Message
          answers.push(answer)
          await reply(answer)
        }
      } else {
        const body = (await response.json()) as Message | Message[]
        for (const answer of Array.isArray(body) ? body : [body]) {
          answers.push(answer)
          await reply(answer)
        }
      }
      if (message.method === 'initialize') protocolVersion = answers.find((a) => a.id === message.id)?.result?.protocolVersion as string | undefined
    } catch (error) {
      if (controller.signal.aborted) return
      const text = (error as { code?: string }).code ? `${(error as { code: string }).code}: ${(error as Error).message}` : (error as Error).message
      if (isRequest) await reply({ jsonrpc: '2.0', id: message.id!, error: { code: -32603, message: text } } as JSONRPCMessage)
      else log(`uagent mcp: ${text}`)
    } finally {
      if (isRequest) inflight.delete(message.id!)
    }
  }

  const ended = new Promise<void>((resolve) => {
    input.once('end', resolve)
    input.once('close', resolve)
  })
  const pending = new Set<Promise<void>>()
  stdio.onmessage = (message) => {
    const work = forward(message as Message)
    pending.add(work)
    void work.finally(() => pending.delete(work))
  }
  stdio.onerror = (error) => log(`uagent mcp: unreadable message on stdin: ${error.message}`)
  await stdio.start()
  await ended
  // stdin closed: the answers to what was already asked still go out, then the relay ends.
  await Promise.allSettled([...pending])
  await stdio.close()
}
