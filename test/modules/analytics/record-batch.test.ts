import { describe, expect, test } from 'bun:test'
import { batchOf, receiveStrings, recordsOf, StringIds, type StringList } from '../../../src/modules/analytics/record-batch'
import { record } from './helpers'

describe('record batches', () => {
  test('each batch carries only the strings it is the first to use; the receiving side reads every batch back whole', () => {
    const ids = new StringIds()
    const received: StringList = [null]
    const first = [record({ ts: 1, userId: 'u1', route: '/a' }), record({ ts: 2, userId: 'u1', route: '/b', model: 'm', promptTokens: 3, completionTokens: 4, status: 500 })]
    const second = [record({ ts: 3, userId: 'u2', route: '/a' }), record({ ts: 4, route: '/b', model: 'm', durationMs: 1.25 })]
    const one = batchOf(ids, first)
    const two = batchOf(ids, second)
    expect(one.strings).toEqual(['GET', '/a', 'u1', '/b', 'm'])
    expect(two.strings).toEqual(['u2'])
    receiveStrings(received, one)
    expect(recordsOf(one, received)).toEqual(first)
    receiveStrings(received, two)
    expect(recordsOf(two, received)).toEqual(second)
  })

  test('past its limit the table starts again, and the next batch says so: ids are reused without mixing up strings', () => {
    const ids = new StringIds()
    const received: StringList = [null]
    const one = batchOf(ids, [record({ ts: 1, route: '/one', userId: 'u1' }), record({ ts: 2, route: '/two', userId: 'u2' })])
    receiveStrings(received, one)
    ids.restartOver(3)
    const later = [record({ ts: 3, route: '/three', userId: 'u3' }), record({ ts: 4, route: '/one', userId: 'u1' })]
    const two = batchOf(ids, later)
    expect(two.reset).toBe(true)
    expect(two.strings).toEqual(['GET', '/three', 'u3', '/one', 'u1'])
    receiveStrings(received, two)
    expect(recordsOf(two, received)).toEqual(later)
    // Below the limit nothing starts again.
    ids.restartOver(100)
    expect(batchOf(ids, [record({ ts: 5, route: '/three' })])).toMatchObject({ reset: false, strings: [] })
  })
})
