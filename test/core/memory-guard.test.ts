import { describe, expect, test } from 'bun:test'
import { MemoryGuard } from '../../src/core/memory-guard'

const MB = 1024 * 1024

describe('memory guard', () => {
  test('asks for a collection once the resident size has grown by the slack over its last low point, not before, and not again until it grows as much once more', () => {
    let resident = 200 * MB
    let collections = 0
    const guard = new MemoryGuard({ slackBytes: 64 * MB, resident: () => resident, collect: () => collections++ })
    resident = 250 * MB
    expect(guard.check()).toBe(false)
    resident = 270 * MB
    expect(guard.check()).toBe(true)
    expect(collections).toBe(1)
    // Still high (the collection has not freed anything yet): no second request.
    expect(guard.check()).toBe(false)
    // Freed: the new low is 210 MB; 60 MB over it asks for nothing, 71 MB asks again.
    resident = 210 * MB
    expect(guard.check()).toBe(false)
    resident = 270 * MB
    expect(guard.check()).toBe(false)
    resident = 281 * MB
    expect(guard.check()).toBe(true)
    expect(collections).toBe(2)
  })

  test('reads the process by default and asks the collector without waiting for it', () => {
    const guard = new MemoryGuard({ slackBytes: 0 })
    // Any growth at all is over a zero slack: whatever the process allocates next is enough.
    const held = Array.from({ length: 300_000 }, (_, i) => ({ i, text: `row ${i}` }))
    let asked = false
    for (let i = 0; i < 20 && !asked; i++) {
      held.push(...Array.from({ length: 50_000 }, (_, j) => ({ i: j, text: `more ${j}` })))
      asked = guard.check()
    }
    expect(asked).toBe(true)
  })
})
