// `bun run bench`: every benchmark, one after another, each in its own process so that one
// section's memory and JIT state do not colour the next. Figures are printed, never asserted.
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const SECTIONS = ['http', 'mixed', 'busy', 'fuzz', 'ml', 'chat', 'conversations', 'openai', 'rag', 'shares', 'assistants', 'rag-postgres', 'rag-scale', 'rag-real', 'vector-scan', 'ranking', 'answers', 'kb', 'documents', 'agents', 'plugins', 'voice', 'analytics', 'backup', 'mcp', 'web', 'postgres', 'team-load', 'postgres-analytics', 'scale', 'agent-replicas', 'rag-scale-postgres']
const only = process.argv.slice(2)

console.log(`Universal Agent benchmarks — bun ${Bun.version}, ${navigator.hardwareConcurrency} cores, ${new Date().toISOString()}`)
let failed = 0
for (const name of SECTIONS) {
  if (only.length && !only.includes(name)) continue
  const file = join(import.meta.dir, `${name}.ts`)
  if (!existsSync(file)) continue
  const proc = Bun.spawn(['bun', file], { stdout: 'inherit', stderr: 'inherit' })
  if ((await proc.exited) !== 0) {
    failed++
    console.log(`(bench ${name} exited with ${proc.exitCode})`)
  }
}
process.exit(failed ? 1 : 0)
