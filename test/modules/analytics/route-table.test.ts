import { describe, expect, test } from 'bun:test'
import { pathOf, RouteTable } from '../../../src/modules/analytics/route-table'

const table = new RouteTable(() => [
  { method: 'GET', path: '/conversations' },
  { method: 'GET', path: '/conversations/:id' },
  { method: 'DELETE', path: '/conversations/:id' },
  { method: 'GET', path: '/conversations/archived' },
  { method: 'DELETE', path: '/rag/collections/:name/documents/:id' },
  { method: 'GET', path: '/docs/*' },
  { method: 'WS', path: '/ws' },
  { method: 'ALL', path: '/anything' },
  { method: 'GET', path: '/' },
])

describe('route patterns', () => {
  test('paths resolve to the pattern of the route they reach, as Elysia routes them', () => {
    expect(table.resolve('GET', '/conversations/4f1c-77')).toBe('/conversations/:id')
    expect(table.resolve('DELETE', '/conversations/4f1c-77')).toBe('/conversations/:id')
    expect(table.resolve('GET', '/conversations/archived')).toBe('/conversations/archived')
    expect(table.resolve('GET', '/conversations/')).toBe('/conversations')
    expect(table.resolve('DELETE', '/rag/collections/docs/documents/a.md')).toBe('/rag/collections/:name/documents/:id')
    expect(table.resolve('GET', '/docs/a/b/c')).toBe('/docs/*')
    expect(table.resolve('HEAD', '/conversations')).toBe('/conversations')
    expect(table.resolve('GET', '/ws')).toBe('/ws')
    expect(table.resolve('PATCH', '/anything')).toBe('/anything')
    expect(table.resolve('GET', '/')).toBe('/')
  })

  test('a path or method with no route gets the fixed label, never the path', () => {
    expect(table.resolve('GET', '/conversations/1/2')).toBe('(unmatched)')
    expect(table.resolve('POST', '/conversations/123')).toBe('(unmatched)')
    expect(table.resolve('GET', '/nothing/here')).toBe('(unmatched)')
  })

  test('pathOf drops the origin and the query string', () => {
    expect(pathOf('http://localhost:3000/rag/search?x=1')).toBe('/rag/search')
    expect(pathOf('http://localhost')).toBe('/')
    expect(pathOf('https://example.com/a/b')).toBe('/a/b')
  })
})
