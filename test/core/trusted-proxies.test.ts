import { afterAll, expect, test } from 'bun:test'
import { buildApp, createServices } from '../../src/app'
import { loadConfig } from '../../src/config'
import { clientAddress, trustedProxies } from '../../src/core/http'

const peer = (address: string) => ({ requestIP: () => ({ address }) })
const forwarded = (value: string) => new Request('http://localhost/', { headers: { 'x-forwarded-for': value } })

test('behind a trusted proxy the client is the right-most X-Forwarded-For address that is not a proxy', () => {
  const proxies = trustedProxies(['10.0.0.0/8', '127.0.0.1', '::1'])
  expect(clientAddress(peer('10.1.2.3'), forwarded('203.0.113.9'), proxies)).toBe('203.0.113.9')
  // What the client itself put in the header is on the left, and is not believed.
  expect(clientAddress(peer('127.0.0.1'), forwarded('198.51.100.1, 203.0.113.9, 10.9.9.9'), proxies)).toBe('203.0.113.9')
  expect(clientAddress(peer('::1'), forwarded('2001:db8::5'), proxies)).toBe('2001:db8::5')
  // An untrusted peer's header is ignored: it cannot pick its own rate-limit key.
  expect(clientAddress(peer('192.0.2.7'), forwarded('203.0.113.9'), proxies)).toBe('192.0.2.7')
  // No proxy configured: the header is ignored from anyone.
  expect(clientAddress(peer('127.0.0.1'), forwarded('203.0.113.9'), null)).toBe('127.0.0.1')
  // A trusted peer without the header, or with garbage in it.
  expect(clientAddress(peer('10.0.0.1'), new Request('http://localhost/'), proxies)).toBe('10.0.0.1')
  expect(clientAddress(peer('10.0.0.1'), forwarded('not-an-address'), proxies)).toBe('10.0.0.1')
})

test('UAGENT_TRUSTED_PROXIES takes addresses and CIDR ranges, and refuses anything else naming the variable', () => {
  expect(loadConfig({ UAGENT_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1,::1' }).trustedProxies).toEqual(['10.0.0.0/8', '127.0.0.1', '::1'])
  expect(loadConfig({}).trustedProxies).toEqual([])
  for (const bad of ['nginx', '10.0.0.0/33', '10.0.0.0/8/1', '::1/129']) expect(() => loadConfig({ UAGENT_TRUSTED_PROXIES: bad })).toThrow(/UAGENT_TRUSTED_PROXIES/)
})

const servers: { stop(): void }[] = []
afterAll(() => {
  for (const server of servers) server.stop()
})

async function limitedClients(env: Record<string, string>) {
  const services = createServices({ database: ':memory:', env: { UAGENT_RATE_LIMIT_MAX: '2', ...env }, log: () => {} })
  const app = buildApp(services).listen({ port: 0, hostname: '127.0.0.1' })
  servers.push({ stop: () => app.stop(true) })
  const login = (client: string) =>
    fetch(`http://127.0.0.1:${app.server!.port}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: '{}' }).then((response) => response.status)
  const statuses: number[] = []
  for (const client of ['203.0.113.1', '203.0.113.1', '203.0.113.2', '203.0.113.2', '203.0.113.3']) statuses.push(await login(client))
  return statuses
}

test('over HTTP: clients behind a trusted proxy get windows of their own; without the setting they share the proxy\'s', async () => {
  expect(await limitedClients({ UAGENT_TRUSTED_PROXIES: '127.0.0.1' })).toEqual([400, 400, 400, 400, 400])
  expect(await limitedClients({})).toEqual([400, 400, 429, 429, 429])
})
