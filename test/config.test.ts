import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig, parseSize } from '../src/config'

describe('config', () => {
  test('defaults follow the contract', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({ port: 3000, host: '127.0.0.1', rateLimitMax: 300, rateLimitWindow: 60, maxRequestSize: '10mb' })
    expect(config.maxRequestBytes).toBe(10 * 1024 * 1024)
  })

  test('a bad value names its variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError)
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/^PORT:/)
    expect(() => loadConfig({ UAGENT_MAX_REQUEST_SIZE: 'huge' })).toThrow(/UAGENT_MAX_REQUEST_SIZE/)
    expect(() => loadConfig({ UAGENT_LLM_URL: 'ftp://x' })).toThrow(/UAGENT_LLM_URL/)
    expect(() => loadConfig({ UAGENT_RATE_LIMIT_WINDOW: '0' })).toThrow(/UAGENT_RATE_LIMIT_WINDOW/)
  })

  test('sizes parse with units', () => {
    expect(parseSize('512kb')).toBe(512 * 1024)
    expect(parseSize('1.5MB')).toBe(1.5 * 1024 * 1024)
    expect(parseSize('abc')).toBeUndefined()
  })
})
