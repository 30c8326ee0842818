// Debian documentation packages as a corpus of real text: downloaded once with `apt-get download`
// into a cache folder, HTML pages stripped to text, and questions as people type them built from
// the pages' titles and section headings. Used by the real-text RAG bench and the ranking set.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

/** Downloads and unpacks the documentation packages once; false (with the reason printed) when that is impossible. */
export function ensurePackages(cache: string, packages: string[]): boolean {
  mkdirSync(cache, { recursive: true })
  for (const name of packages) {
    const dir = join(cache, name)
    if (existsSync(join(dir, 'usr'))) continue
    let deb = readdirSync(cache).find((file) => file.startsWith(`${name}_`) && file.endsWith('.deb'))
    if (!deb) {
      if (!Bun.which('apt-get')) {
        console.log(`(skipped: apt-get is not available to download ${name})`)
        return false
      }
      const result = Bun.spawnSync(['apt-get', 'download', name], { cwd: cache, stdout: 'ignore', stderr: 'pipe' })
      deb = readdirSync(cache).find((file) => file.startsWith(`${name}_`) && file.endsWith('.deb'))
      if (!deb) {
        console.log(`(skipped: apt-get download ${name} failed: ${result.stderr.toString().trim().split('\n').pop()}; run apt-get update first?)`)
        return false
      }
    }
    mkdirSync(dir, { recursive: true })
    const extracted = Bun.spawnSync(['dpkg-deb', '-x', join(cache, deb), dir], { stderr: 'pipe' })
    if (extracted.exitCode !== 0) {
      console.log(`(skipped: dpkg-deb -x ${deb} failed: ${extracted.stderr.toString().trim()})`)
      return false
    }
  }
  return true
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“', copy: '©' }
const decode = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') {
      const code = entity[1] === 'x' || entity[1] === 'X' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1))
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : ' '
    }
    return ENTITIES[entity.toLowerCase()] ?? whole
  })
const inline = (html: string) => decode(html.replace(/<[^>]*>/g, '')).replace(/\s+/g, ' ').trim()

/** Text of an HTML page: blocks become paragraphs, preformatted text keeps its lines. */
export function htmlToText(html: string): string {
  const body = html
    .replace(/<head[\s\S]*?<\/head>/i, '')
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<div class="nav(header|footer)">[\s\S]*?<\/div>/g, '')
  const blocks = body
    .replace(/<\/?(p|div|h[1-6]|li|dt|dd|tr|table|pre|blockquote|br|hr|ul|ol|dl)\b[^>]*>/gi, '\n\n')
    .split(/\n\s*\n/)
    .map((block) => decode(block.replace(/<[^>]*>/g, '')).replace(/\s+/g, ' ').trim())
    .filter(Boolean)
  return blocks.join('\n\n')
}

export interface Page {
  id: string
  text: string
  titles: string[]
}

export function loadPages(cache: string, packages: string[]): Page[] {
  const pages: Page[] = []
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    // Symbolic links skipped: git-doc links usr/share/doc/git/html to its own folder, which made every page twice.
    const stat = lstatSync(path)
    return stat.isSymbolicLink() ? [] : stat.isDirectory() ? walk(path) : name.endsWith('.html') ? [path] : []
  })
  for (const name of packages) {
    for (const path of walk(join(cache, name)).sort()) {
      const html = readFileSync(path, 'utf8')
      const text = htmlToText(html)
      if (text.length < 200 || Buffer.byteLength(text) > 1_000_000) continue
      const headings = [...html.matchAll(/<(title|h[1-3])\b[^>]*>([\s\S]*?)<\/\1>/gi)].map((m) => inline(m[2]!))
      const titles = [...new Set(headings.map((t) => t.replace(/^(Chapter|Appendix|Part)?\s*[\dIVXA-Z]+(\.\d+)*\.?\s+/, '').replace(/\s*\(\d\)$/, '').trim()))]
        .filter((t) => t.length >= 4 && t.length <= 80 && !/^(PostgreSQL|Git)\b.*Documentation/i.test(t))
      pages.push({ id: relative(cache, path), text, titles })
    }
  }
  return pages
}

/** A deterministic sample of questions as people type them, each with the page it came from. */
export function questions(pages: Page[], count: number): { query: string; source: string }[] {
  const templates = [(t: string) => `how do I use ${t}`, (t: string) => `what is ${t}`, (t: string) => `how does ${t} work`, (t: string) => `what is the ${t} for`]
  // Only titles found on one page: "Synopsis" or "Examples" head hundreds of pages and name none of them.
  const pagesOf = new Map<string, number>()
  for (const page of pages) for (const title of page.titles) pagesOf.set(title.toLowerCase(), (pagesOf.get(title.toLowerCase()) ?? 0) + 1)
  const all = pages.flatMap((page) => page.titles.filter((title) => pagesOf.get(title.toLowerCase()) === 1).map((title) => ({ title, source: page.id })))
  const picked: { query: string; source: string }[] = []
  const step = all.length / count
  for (let i = 0; i < count && i * step < all.length; i++) {
    const { title, source } = all[Math.floor(i * step)]!
    picked.push({ query: templates[i % templates.length]!(title.toLowerCase()), source })
  }
  return picked
}

