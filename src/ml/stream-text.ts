// Helpers for engines that produce a whole text and hand it out as a stream.

/** Approximate tokens: words and punctuation marks. */
export function countTextTokens(text: string): number {
  return text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu)?.length ?? 0
}

/** Cuts the text at the first stop sequence. */
export function applyStops(text: string, stop: string[] | undefined): string {
  let end = text.length
  for (const sequence of stop ?? []) {
    const at = sequence ? text.indexOf(sequence) : -1
    if (at >= 0 && at < end) end = at
  }
  return text.slice(0, end)
}

/**
 * Yields the text a word at a time (each piece keeps its leading space), at most `maxTokens`
 * pieces, yielding to the event loop between pieces so cancellation and other requests get in.
 */
export async function* streamText(text: string, maxTokens: number | undefined, signal?: AbortSignal): AsyncGenerator<string> {
  const pieces = text.match(/\s*\S+/g) ?? []
  const limit = maxTokens ?? Number.POSITIVE_INFINITY
  for (let i = 0; i < pieces.length && i < limit; i++) {
    if (signal?.aborted) return
    yield pieces[i]!
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}
