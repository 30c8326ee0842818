/**
 * Changes the duration of speech by `rate` (2 = half as long) without changing its pitch: WSOLA,
 * overlap-adding Hann-windowed frames taken where they best continue the previous one.
 */
export function timeStretch(input: Float32Array, rate: number, sampleRate: number): Float32Array {
  if (rate === 1 || input.length === 0) return input
  const frame = Math.round(sampleRate * 0.03)
  const hopOut = Math.floor(frame / 2)
  const hopIn = hopOut * rate
  const tolerance = Math.floor(frame / 4)
  const outLength = Math.max(1, Math.round(input.length / rate))
  const out = new Float32Array(outLength + frame)
  const weight = new Float32Array(outLength + frame)
  const window = new Float32Array(frame)
  for (let i = 0; i < frame; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (frame - 1))
  const at = (i: number) => (i >= 0 && i < input.length ? input[i]! : 0)
  let previous = 0
  for (let k = 0; k * hopOut < outLength; k++) {
    const ideal = Math.round(k * hopIn)
    let best = ideal
    if (k > 0) {
      // The natural continuation of the previous frame; pick the nearby frame most like it.
      const natural = previous + hopOut
      let bestScore = -Infinity
      for (let offset = -tolerance; offset <= tolerance; offset += 2) {
        const start = ideal + offset
        let score = 0
        for (let i = 0; i < frame; i += 4) score += at(start + i) * at(natural + i)
        if (score > bestScore) {
          bestScore = score
          best = start
        }
      }
    }
    const position = k * hopOut
    for (let i = 0; i < frame; i++) {
      out[position + i]! += at(best + i) * window[i]!
      weight[position + i]! += window[i]!
    }
    previous = best
  }
  const result = new Float32Array(outLength)
  for (let i = 0; i < outLength; i++) result[i] = weight[i]! > 1e-3 ? out[i]! / weight[i]! : out[i]!
  return result
}
