// Refusal families for `bun run bench answers` and scripts/fit-refusal.ts: a small handbook in one
// collection beside hundreds of unrelated real documents of this machine, with questions the
// handbook answers and world-knowledge questions nothing in the collection answers.
//   calibration family: pages of the Git manual (git-doc, downloaded once with apt-get into .bench)
//                       as the handbook, questions made from their headings, manual pages as the noise;
//   check family:       the documents of test/fixtures/answers-labelled.json (licences, package
//                       documentation, manual pages) with their hand-written questions, files of
//                       /usr/share/doc as the noise. Not used to choose anything.
//   tool family (issue 56.3): eight pages on one small command-line tool (test/fixtures/tool-handbook.json)
//                       beside 0, 100 or 300 licence files of node_modules, its eight questions and
//                       the 31 more written while looking into the issue; its eight world questions.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import labelled from '../../test/fixtures/answers-labelled.json'
import world from '../../test/fixtures/world-questions.json'
import tool from '../../test/fixtures/tool-handbook.json'
import { licenceFiles } from '../../test/licence-files'
import { ensurePackages, loadPages, questions } from '../debian-docs'
import type { IngestDocument } from '../../src/modules/rag/service'

export interface Family {
  name: string
  handbook: IngestDocument[]
  noise: IngestDocument[]
  /** Questions the handbook answers, with the document that does. */
  answerable: { question: string; document: string }[]
  world: string[]
}

const read = (path: string) => (path.endsWith('.gz') ? gunzipSync(readFileSync(path)).toString('utf8') : readFileSync(path, 'utf8'))

/** A manual page's roff source as plain text: macros dropped (their words kept), escapes removed. */
export function roffText(source: string): string {
  return source
    .split('\n')
    .filter((line) => !/^[.']\s*\\"/.test(line))
    .filter((line) => !/^\.\s*(TH|so|de|ds|nr|if|ie|el|ig|\.|PD|ad|na|nh|hy|ne|sp|br|in|ti|ft|fi|nf|RS|RE|UR|UE|ME|MT|EX|EE|ll|ta|tr|ps|vs|cu|ul)\b/.test(line) && !/^'\\"/.test(line))
    .map((line) => line.replace(/^\.\s*(SH|SS|TP|IP|PP|LP|P|HP|B|I|BR|IR|RB|RI|BI|IB|SM|SB|OP|Nm|Nd|Fl|Ar|Op|It|Pa|Xr|Dl|Sh|Ss|Pp|Bl|El|Bd|Ed)\b\s*/, ''))
    .join('\n')
    .replace(/\\f(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\\((em|en|hy|bu|lq|rq|aq|dq|co|rg|tm|mi|pl|mu|>=|<=)/g, (_, c: string) => ({ em: '—', en: '–', hy: '-', bu: '•', lq: '"', rq: '"', aq: "'", dq: '"', co: '©', rg: '®', tm: '™', mi: '-', pl: '+', mu: '×', '>=': '≥', '<=': '≤' })[c] ?? '')
    .replace(/\\\*(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\[-e]/g, (m) => (m === '\\-' ? '-' : '\\'))
    .replace(/\\[&|^%:!/,~0 ]|\\s[-+]?\d/g, (m) => (m === '\\ ' || m === '\\~' || m === '\\0' ? ' ' : ''))
    .replace(/"/g, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

/** Manual pages of this machine as documents (sections 1, 5 and 8), skipping those `skip` matches; sorted, at most `limit`. */
export function manualPages(limit: number, skip: RegExp): IngestDocument[] {
  const out: IngestDocument[] = []
  for (const section of ['man1', 'man8', 'man5']) {
    const dir = join('/usr/share/man', section)
    if (!existsSync(dir)) continue
    for (const name of readdirSync(dir).sort()) {
      if (out.length >= limit) return out
      if (skip.test(name)) continue
      const path = join(dir, name)
      if (!statSync(path).isFile()) continue
      const text = roffText(read(path))
      if (text.length < 1500 || text.length > 400_000) continue
      out.push({ id: `man/${section}/${name}`, content: text, metadata: { title: name.replace(/\.gz$/, '') } })
    }
  }
  return out
}

/** Text files of /usr/share/doc (READMEs, NEWS, .txt manuals, Debian notes), skipping packages `skip` matches; at most `limit`. */
export function docFiles(limit: number, skip: RegExp): IngestDocument[] {
  const out: IngestDocument[] = []
  if (!existsSync('/usr/share/doc')) return out
  for (const pkg of readdirSync('/usr/share/doc').sort()) {
    if (skip.test(pkg)) continue
    const dir = join('/usr/share/doc', pkg)
    let names: string[]
    try {
      names = readdirSync(dir).sort()
    } catch {
      continue
    }
    for (const name of names) {
      if (out.length >= limit) return out
      if (!/^(README|NEWS|TODO|FAQ|AUTHORS|THANKS)|\.txt(\.gz)?$|\.md(\.gz)?$|^changelog\.Debian\.gz$/.test(name)) continue
      const path = join(dir, name)
      try {
        if (!statSync(path).isFile()) continue
        const text = read(path)
        if (text.length < 1000 || text.length > 100_000 || text.includes('\u0000')) continue
        out.push({ id: `doc/${pkg}/${name}`, content: text, metadata: { title: `${pkg} ${name}` } })
      } catch {}
    }
  }
  return out
}

/** The calibration family (null when git-doc cannot be had). */
export function gitFamily(cache: string, noise = 300, handbookPages = 40): Family | null {
  if (!ensurePackages(cache, ['git-doc'])) return null
  const pages = loadPages(cache, ['git-doc'])
  const asked = questions(pages, 120)
  const picked = [...new Set(asked.map((q) => q.source))].slice(0, handbookPages)
  const handbook = pages.filter((p) => picked.includes(p.id)).map((p) => ({ id: p.id, content: p.text, metadata: { title: p.titles[0] ?? p.id } }))
  return {
    name: `Git manual (${handbook.length} pages) + ${noise} manual pages`,
    handbook,
    noise: manualPages(noise, /^git/i),
    answerable: asked.filter((q) => picked.includes(q.source)).map((q) => ({ question: q.query, document: q.source })),
    world: world.calibrate,
  }
}

/** The check family: the labelled answers set's documents and questions, with files of /usr/share/doc as noise. */
export function licenceFamily(noise = 300): Family {
  return {
    name: `licences and Debian docs (${labelled.documents.length} documents) + ${noise} /usr/share/doc files`,
    handbook: labelled.documents,
    noise: docFiles(noise, /^(base-passwd|openssh|dpkg)$/),
    answerable: labelled.questions.map((q) => ({ question: q.question, document: q.document })),
    world: world.check,
  }
}

/** The tool family (issue 56.3): a small tool's handbook beside `noise` licence files of node_modules (as a shared drive holds them). */
export function toolFamily(noise: number): Family {
  return {
    name: `a tool's handbook (${tool.documents.length} pages) + ${noise} licence files of node_modules`,
    handbook: tool.documents,
    noise: licenceFiles().slice(0, noise),
    answerable: [...tool.answerable, ...tool.more],
    world: tool.world,
  }
}
