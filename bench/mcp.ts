// MCP: what a rag_search tool call over Streamable HTTP (POST /mcp, one JSON-RPC tools/call, as an
// MCP client sends it once connected) adds to POST /rag/search for the same query, same caller,
// same server, alternating; and the same call through the SDK's own client, for reference.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { buildApp, createServices } from '../src/app'

const RUNS = Number(process.env.BENCH_MCP_RUNS ?? 400)
const WARMUP = 100
const QUERY = 'how do I reset the office printer'
const TOPICS = ['printer', 'VPN', 'payroll', 'holidays', 'laptop', 'badge', 'parking', 'wifi', 'expenses', 'backup']

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

export async function benchMcp() {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-mcp-'))
  const services = createServices({ dataDir, env: {}, adminEmail: 'bench@example.com', adminPassword: 'bench-password', rateLimitMax: 1_000_000_000, log: () => {} })
  const app = buildApp(services).listen({ port: 0, development: false })
  const base = `http://127.0.0.1:${app.server!.port}`
  const json = { 'content-type': 'application/json' }
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'bench@example.com', password: 'bench-password' }) })).json()) as {
    accessToken: string
  }
  const key = ((await (await fetch(`${base}/auth/api-keys`, { method: 'POST', headers: { ...json, authorization: `Bearer ${login.accessToken}` }, body: JSON.stringify({ name: 'bench' }) })).json()) as { key: string }).key
  const auth = { authorization: `Bearer ${key}` }
  const documents = Array.from({ length: 300 }, (_, i) => {
    const topic = TOPICS[i % TOPICS.length]!
    return { id: `doc-${i}`, content: `Notes on the ${topic}, part ${i}. To reset or fix the ${topic}, ask the help desk, then follow step ${i % 7} of the ${topic} guide. ${'More detail about the office. '.repeat(20)}` }
  })
  const ingested = await fetch(`${base}/rag/ingest`, { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify({ collection: 'handbook', documents }) })
  if (!ingested.ok) throw new Error(`ingest failed: ${ingested.status} ${await ingested.text()}`)

  const arguments_ = { collection: 'handbook', query: QUERY, limit: 5 }
  const rest = async () => {
    const response = await fetch(`${base}/rag/search`, { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify(arguments_) })
    const body = (await response.json()) as { results: { id: string }[] }
    return body.results.map((r) => r.id)
  }
  let id = 0
  const mcp = async () => {
    const response = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...json, ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'rag_search', arguments: arguments_ } }),
    })
    const body = (await response.json()) as { result?: { structuredContent: { results: { id: string }[] } } }
    if (!body.result) throw new Error(`MCP call failed: ${JSON.stringify(body)}`)
    return body.result.structuredContent.results.map((r) => r.id)
  }
  const client = new Client({ name: 'bench', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: auth } }))
  const sdk = async () => {
    const result = (await client.callTool({ name: 'rag_search', arguments: arguments_ })) as unknown as { structuredContent: { results: { id: string }[] } }
    return result.structuredContent.results.map((r) => r.id)
  }

  const same = JSON.stringify(await rest()) === JSON.stringify(await mcp()) && JSON.stringify(await rest()) === JSON.stringify(await sdk())
  const times = { rest: [] as number[], mcp: [] as number[], sdk: [] as number[] }
  const paths = { rest, mcp, sdk }
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const name of ['rest', 'mcp', 'sdk'] as const) {
      const started = performance.now()
      await paths[name]()
      if (i >= WARMUP) times[name].push(performance.now() - started)
    }
  }
  await client.close()
  app.stop(true)
  await services.mcp.close()
  services.db.close()
  rmSync(dataDir, { recursive: true, force: true })

  const p50 = { rest: percentile(times.rest, 50), mcp: percentile(times.mcp, 50), sdk: percentile(times.sdk, 50) }
  const added = p50.mcp - p50.rest
  console.log(`\n== MCP (rag_search over Streamable HTTP vs POST /rag/search; 300 documents, ${RUNS} calls each, alternating, one at a time)`)
  console.log(`same results both ways: ${same ? 'yes' : 'NO'}`)
  console.log(`POST /rag/search                    p50 ${p50.rest.toFixed(2).padStart(6)} ms  p90 ${percentile(times.rest, 90).toFixed(2).padStart(6)} ms`)
  console.log(`POST /mcp tools/call rag_search     p50 ${p50.mcp.toFixed(2).padStart(6)} ms  p90 ${percentile(times.mcp, 90).toFixed(2).padStart(6)} ms`)
  console.log(`  the same through the SDK's Client p50 ${p50.sdk.toFixed(2).padStart(6)} ms  p90 ${percentile(times.sdk, 90).toFixed(2).padStart(6)} ms  (client-side work included)`)
  console.log(`added by MCP (p50)                      ${added.toFixed(2).padStart(6)} ms   goal <= 2 ms  ${added <= 2 ? 'ok' : 'MISSED'}`)
}

if (import.meta.main) await benchMcp()
