import { describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { tempDir } from '../temp'

// The layers of src/ (docs/architecture.md): modules use core, db and ml, never the other way;
// and no two files import each other (type-only imports count: they tie the files together just
// the same). The migrations are left out of the circle check: they are a list their runner reads.

const SRC = resolve(import.meta.dir, '../../src')
const LOWER_LAYERS = ['core', 'db', 'ml']

/** Every .ts file under a folder. */
function sourceFiles(dir: string): string[] {
  const files: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...sourceFiles(path))
    else if (entry.name.endsWith('.ts')) files.push(path)
  }
  return files
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g

/** The files under `root` that `file` imports by a relative path (resolved like the bundler: .ts, /index.ts). */
function relativeImports(file: string): string[] {
  const targets: string[] = []
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? match[3]!
    if (!spec.startsWith('.')) continue
    const base = resolve(dirname(file), spec)
    const target = [base, `${base}.ts`, join(base, 'index.ts')].find((path) => existsSync(path) && statSync(path).isFile())
    if (target) targets.push(target)
  }
  return targets
}

/** Pairs of files that import each other, and imports from a lower layer up into modules/. */
function layerProblems(root: string, skipCycles: (path: string) => boolean = () => false) {
  const graph = new Map(sourceFiles(root).map((file) => [file, new Set(relativeImports(file))]))
  const cycles: string[] = []
  for (const [a, targets] of graph) {
    for (const b of targets) {
      if (a < b && graph.get(b)?.has(a) && !skipCycles(a) && !skipCycles(b)) cycles.push(`${relative(root, a)} <-> ${relative(root, b)}`)
    }
  }
  const upward: string[] = []
  for (const [file, targets] of graph) {
    const layer = relative(root, file).split('/')[0]!
    if (!LOWER_LAYERS.includes(layer)) continue
    for (const target of targets) {
      if (relative(root, target).startsWith('modules/')) upward.push(`${relative(root, file)} -> ${relative(root, target)}`)
    }
  }
  return { cycles: cycles.sort(), upward: upward.sort() }
}

const isMigration = (path: string) => relative(SRC, path).startsWith('db/migrations/')

describe('imports in src/', () => {
  test('no two files import each other (outside the migrations)', () => {
    const { cycles } = layerProblems(SRC, isMigration)
    expect(cycles, `these files import each other; move what both need into one of them or a third file:\n${cycles.join('\n')}`).toEqual([])
  })

  test('nothing in core/, db/ or ml/ imports from modules/', () => {
    const { upward } = layerProblems(SRC)
    expect(upward, `lower layers import from modules/; take an interface the module implements instead:\n${upward.join('\n')}`).toEqual([])
  })

  test('the check sees a circle (type-only or dynamic) and an upward import when they are there', () => {
    const root = tempDir('layers')
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    write('modules/a/service.ts', "import type { B } from './tools'\nexport interface A { b: B }\n")
    write('modules/a/tools.ts', "export interface B { n: number }\nexport const load = () => import('./service')\n")
    write('modules/a/index.ts', "import { load } from './tools'\nexport { load }\n")
    write('core/auth.ts', "import type {\n  A,\n} from '../modules/a/service'\nexport type Caller = A\n")
    write('ml/text.ts', "export { load } from '../modules/a'\n")
    write('db/index.ts', "import { Caller } from '../core/auth'\nexport type X = Caller\n")
    expect(layerProblems(root)).toEqual({
      cycles: ['modules/a/service.ts <-> modules/a/tools.ts'],
      upward: ['core/auth.ts -> modules/a/service.ts', 'ml/text.ts -> modules/a/index.ts'],
    })
  })
})
