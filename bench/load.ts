// A load generator meant to run as its own process: `bun bench/load.ts <url> <concurrency> <ms> [token]`.
// Prints one JSON line: { requests, errors, seconds, rps }.
const [url, concurrencyArg = '32', msArg = '3000', token] = process.argv.slice(2)
if (!url) throw new Error('usage: bun bench/load.ts <url> <concurrency> <ms> [token]')
const concurrency = Number(concurrencyArg)
const duration = Number(msArg)
const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}

let requests = 0
let errors = 0
async function worker(deadline: number) {
  while (performance.now() < deadline) {
    const response = await fetch(url!, { headers })
    await response.arrayBuffer()
    if (response.ok) requests++
    else errors++
  }
}

// Warm up the connections, then measure.
const warm = performance.now() + Math.min(500, duration / 4)
await Promise.all(Array.from({ length: concurrency }, () => worker(warm)))
requests = 0
errors = 0
const start = performance.now()
await Promise.all(Array.from({ length: concurrency }, () => worker(start + duration)))
const seconds = (performance.now() - start) / 1000
console.log(JSON.stringify({ requests, errors, seconds, rps: requests / seconds }))
