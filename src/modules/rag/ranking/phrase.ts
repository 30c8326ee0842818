/** Occurrences of a token sequence (one token: its count) in a chunk, from each token's positions there. */
export function phraseFrequency(tokens: string[], offsets: Map<string, number[]> | undefined): number {
  const first = offsets?.get(tokens[0]!)
  if (!first) return 0
  if (tokens.length === 1) return first.length
  const rest = tokens.slice(1).map((token) => new Set(offsets!.get(token) ?? []))
  return first.filter((start) => rest.every((set, j) => set.has(start + j + 1))).length
}
