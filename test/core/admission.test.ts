import { describe, expect, test } from 'bun:test'
import { Admission } from '../../src/core/admission'
import { makeServer } from '../helpers'

describe('admission', () => {
  test('at most `limit` at once; the others wait and are let in in order of arrival as places free', async () => {
    const door = new Admission(2, 10_000)
    const first = door.enter()
    const second = door.enter()
    expect(first).not.toBeInstanceOf(Promise)
    expect(second).not.toBeInstanceOf(Promise)
    const order: string[] = []
    const third = (door.enter() as Promise<any>).then((lease) => (order.push('third'), lease))
    const fourth = (door.enter() as Promise<any>).then((lease) => (order.push('fourth'), lease))
    expect(door.queued).toBe(2)
    await Bun.sleep(5)
    expect(order).toEqual([])
    door.leave(first as any)
    const admitted = await third
    expect(order).toEqual(['third'])
    // Leaving twice frees one place only.
    door.leave(first as any)
    await Bun.sleep(5)
    expect(order).toEqual(['third'])
    door.leave(second as any)
    door.leave(await fourth)
    door.leave(admitted)
    expect(door.running).toBe(0)
    expect(door.queued).toBe(0)
  })

  test('a request that outlives its lease stops counting: slow ones hold the others back by the lease at most', async () => {
    const door = new Admission(1, 30)
    const slow = door.enter()
    const started = performance.now()
    const next = await door.enter()
    const waited = performance.now() - started
    expect(waited).toBeGreaterThanOrEqual(25)
    expect(door.running).toBe(1)
    // The slow one ending later changes nothing.
    door.leave(slow as any)
    expect(door.running).toBe(1)
    door.leave(next)
    expect(door.running).toBe(0)
  })

  test('over HTTP: more requests than places all get their answers, and a failing handler frees its place', async () => {
    const { call, login, services } = makeServer()
    expect(services.config.maxActiveRequests).toBe(16)
    const { accessToken: token } = await login()
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        i % 3 === 0 ? call('GET', '/conversations/nope', { token }) : i % 3 === 1 ? call('POST', '/chat', { token, body: { message: `hello ${i}` } }) : call('GET', '/health'),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? 404 : 200)))
    expect((await call('GET', '/health')).status).toBe(200)
  })
})
