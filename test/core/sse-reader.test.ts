import { describe, expect, test } from 'bun:test'
import { readEventData } from '../../src/core/sse-reader'

/** The events read from a body that arrives in exactly these chunks. */
async function events(chunks: string[]): Promise<string[]> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })
  const out: string[] = []
  for await (const data of readEventData(body)) out.push(data)
  return out
}

describe('readEventData', () => {
  test('a \\r\\n split between two chunks ends a line once, not twice', async () => {
    expect(await events(['data: A\r\n\r', '\ndata: B\r\n\r\n'])).toEqual(['A', 'B'])
    expect(await events(['data: A\r', '\n\r\ndata: B\r\n\r\n'])).toEqual(['A', 'B'])
  })

  test('lines may end in \\r alone, even at the very end of the body', async () => {
    expect(await events(['data: A\r\rdata: B\r\r'])).toEqual(['A', 'B'])
    expect(await events(['data: A\r\r'])).toEqual(['A'])
  })

  test('events split anywhere, multi-line data joined, comments skipped, an unterminated event dropped', async () => {
    expect(await events(['da', 'ta: A\n', '\n: ping\n\ndata: b1\ndata: b2\n\n', 'data: never ended'])).toEqual(['A', 'b1\nb2'])
  })
})
