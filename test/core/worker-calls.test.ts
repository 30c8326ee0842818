import { describe, expect, test } from 'bun:test'
import { WorkerCalls } from '../../src/core/worker-calls'

const ECHO = new URL('../fixtures/echo.worker.ts', import.meta.url).href

describe('WorkerCalls', () => {
  test('each call gets its own reply, whatever order the thread answers in', async () => {
    const calls = new WorkerCalls(ECHO)
    expect(calls.running).toBe(false)
    try {
      const slow = calls.call<{ text: string }>({ text: 'slow', delayMs: 150 })
      const fast = calls.call<{ text: string }>({ text: 'fast' })
      expect(calls.running).toBe(true)
      expect((await fast).text).toBe('FAST')
      expect((await slow).text).toBe('SLOW')
    } finally {
      calls.close()
    }
  })

  test('close() rejects the calls in flight, and the next call starts a new thread', async () => {
    const calls = new WorkerCalls(ECHO)
    try {
      const pending = calls.call({ text: 'never', delayMs: 5_000 })
      calls.close('closed by the test')
      expect(calls.running).toBe(false)
      await expect(pending).rejects.toThrow('closed by the test')
      expect(((await calls.call<{ text: string }>({ text: 'again' })) as { text: string }).text).toBe('AGAIN')
    } finally {
      calls.close()
    }
  })

  test('a thread that fails rejects what it had; the next call starts a new one', async () => {
    const calls = new WorkerCalls(ECHO)
    try {
      const settled = await Promise.allSettled([calls.call({ text: 'lost', delayMs: 5_000 }), calls.call({ crash: true })])
      expect(settled.map((result) => result.status)).toEqual(['rejected', 'rejected'])
      expect(String((settled[0] as PromiseRejectedResult).reason)).toContain('asked to crash')
      expect(calls.running).toBe(false)
      expect(((await calls.call<{ text: string }>({ text: 'back' })) as { text: string }).text).toBe('BACK')
    } finally {
      calls.close()
    }
  })
})
