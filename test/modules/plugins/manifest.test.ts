import { describe, expect, test } from 'bun:test'
import { schemaProblems, validate } from '../../../src/modules/plugins/json-schema'
import { ManifestError, parseManifest } from '../../../src/modules/plugins/manifest'

const manifest = (overrides: Record<string, unknown> = {}) => ({
  name: 'hello',
  version: '1.0.0',
  description: 'Greets people',
  category: 'utility',
  permissions: [],
  main: 'index.js',
  actions: { greet: { description: 'Say hello', parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } },
  ...overrides,
})

describe('plugin.json', () => {
  test("the contract's example is valid", () => {
    expect(parseManifest(manifest())).toMatchObject({ name: 'hello', version: '1.0.0', main: 'index.js' })
  })

  test('an action may declare readOnly (true or false); absent, it is not read-only', () => {
    const actions = { look: { description: 'Look up', readOnly: true }, write: { description: 'Write', readOnly: false }, other: { description: 'Other' } }
    const parsed = parseManifest(manifest({ actions }))
    expect([parsed.actions.look!.readOnly, parsed.actions.write!.readOnly, parsed.actions.other!.readOnly]).toEqual([true, false, undefined])
  })

  test('names, main paths, actions and schemas are checked', () => {
    const invalid: Record<string, unknown>[] = [
      { name: 'Hello' },
      { name: '../evil' },
      { name: '-x' },
      { name: 'a'.repeat(65) },
      { main: '../outside.js' },
      { main: '/etc/passwd' },
      { main: 'lib/../../x.js' },
      { actions: {} },
      { actions: { 'bad-name': { description: 'x' } } },
      { actions: { __proto__: null, ok: { parameters: { type: 'string' } } } },
      { actions: { ok: { parameters: { type: 'object', oneOf: [] } } } },
      { actions: { ok: { parameters: { type: 'object', properties: { x: { type: 'strng' } } } } } },
      { permissions: 'network' },
      { version: '' },
      { actions: { ok: { description: 'x', readOnly: 'yes' } } },
    ]
    for (const overrides of invalid) expect(() => parseManifest(manifest(overrides))).toThrow(ManifestError)
    expect(() => parseManifest('{}')).toThrow(ManifestError)
  })
})

describe('parameter validation', () => {
  const schema = {
    type: 'object',
    properties: {
      text: { type: 'string', minLength: 1, maxLength: 5, pattern: '^[a-z]+$' },
      count: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
      mode: { enum: ['fast', 'slow'] },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
      nested: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'] },
    },
    required: ['text'],
    additionalProperties: false,
  }
  const check = (value: unknown) => validate(schema, value, 'parameters')

  test('fills defaults and accepts what the schema allows', () => {
    expect(check({ text: 'abc' })).toEqual({ ok: true, value: { text: 'abc', count: 3 } })
    expect(check({ text: 'abc', count: 10, mode: 'slow', tags: ['a'], nested: { on: true } }).ok).toBe(true)
  })

  test('each failure names its field', () => {
    const message = (value: unknown) => {
      const result = check(value)
      return result.ok ? 'ok' : result.message
    }
    expect(message({})).toBe('parameters.text: is required')
    expect(message({ text: 'ABC' })).toContain('parameters.text: must match')
    expect(message({ text: 'abcdef' })).toBe('parameters.text: must be at most 5 characters')
    expect(message({ text: 'a', count: 1.5 })).toBe('parameters.count: must be an integer, got number')
    expect(message({ text: 'a', count: 11 })).toBe('parameters.count: must be at most 10')
    expect(message({ text: 'a', mode: 'medium' })).toBe('parameters.mode: must be one of "fast", "slow"')
    expect(message({ text: 'a', tags: ['x', 2] })).toBe('parameters.tags[1]: must be a string, got number')
    expect(message({ text: 'a', nested: {} })).toBe('parameters.nested.on: is required')
    expect(message({ text: 'a', extra: 1 })).toBe('parameters.extra: is not a known parameter')
    expect(message({ text: 'a', constructor: 1 })).toBe('parameters.constructor: is not a known parameter')
    expect(message(JSON.parse('{"text":"a","__proto__":{"x":1}}'))).toBe('parameters.__proto__: is not a known parameter')
    expect(message([])).toBe('parameters: must be an object, got array')
  })

  test('a required property named like an Object.prototype member is still required', () => {
    const result = validate({ type: 'object', properties: { constructor: { type: 'string' } }, required: ['constructor'] }, {}, 'parameters')
    expect(result).toEqual({ ok: false, message: 'parameters.constructor: is required' })
  })

  test('schemas with unsupported keywords are reported', () => {
    expect(schemaProblems({ type: 'object', anyOf: [] }, 'p')).toEqual(['p: keyword "anyOf" is not supported'])
    expect(schemaProblems({ type: 'object', properties: { a: { type: 'string', pattern: '(' } } }, 'p')).toEqual(['p.properties.a.pattern: not a valid regular expression'])
  })
})
