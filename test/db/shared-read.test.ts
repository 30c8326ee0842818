import { expect, test } from 'bun:test'
import { SharedRead } from '../../src/db/shared-read'

test('SharedRead: callers during a read share the next one, started after they asked; a failed read fails its callers only', async () => {
  const started: number[] = []
  let release: (() => void)[] = []
  let fail = false
  const shared = new SharedRead(async () => {
    started.push(performance.now())
    await new Promise<void>((resolve) => release.push(resolve))
    if (fail) throw new Error('read failed')
  })
  const first = shared.run()
  const askedAt = performance.now()
  const second = shared.run()
  const third = shared.run()
  expect(second).toBe(third)
  expect(started.length).toBe(1)
  release.shift()!()
  await first
  // The next read starts once the first is done: after the second and third callers asked.
  await Bun.sleep(1)
  expect(started.length).toBe(2)
  expect(started[1]!).toBeGreaterThanOrEqual(askedAt)
  fail = true
  release.shift()!()
  expect(await second.then(() => 'ok', (error: Error) => error.message)).toBe('read failed')
  fail = false
  const fourth = shared.run()
  expect(started.length).toBe(3)
  release.shift()!()
  await fourth
  release = []
})
