// Unrelated documents as a shared drive holds them: the licence and copying files under
// node_modules, each text once, in path order. The same files wherever `bun install
// --frozen-lockfile` installed the lockfile, so a check built on them is deterministic. Used by
// test/modules/kb/refusals-noise.test.ts and the answers benchmark (bench/answers/refusal.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { IngestDocument } from '../src/modules/rag/service'

export function licenceFiles(root = join(import.meta.dir, '../node_modules')): IngestDocument[] {
  const out: IngestDocument[] = []
  const seen = new Set<string>()
  const walk = (dir: string) => {
    let names: string[]
    try {
      names = readdirSync(dir).sort()
    } catch {
      return
    }
    for (const name of names) {
      const path = join(dir, name)
      let stat
      try {
        stat = statSync(path)
      } catch {
        continue
      }
      if (stat.isDirectory()) walk(path)
      else if (/^(licen[cs]e|copying)/i.test(name) && stat.size > 200 && stat.size < 100_000) {
        const text = readFileSync(path, 'utf8')
        if (seen.has(text)) continue
        seen.add(text)
        out.push({ id: path.slice(root.length + 1), content: text, metadata: { title: name } })
      }
    }
  }
  walk(root)
  return out
}
