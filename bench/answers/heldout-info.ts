// A second held-out documentation family (issue 37, point 6), of another kind than the manual pages
// of heldout.ts, to check that ranking improves on documentation in general and not on one set:
// the GNU manuals of this machine in Info format (/usr/share/info: coreutils, grep, sed, find, gzip,
// wget, gnupg, …), one document per node, asked by the node's own heading ("‘cat’: Concatenate and
// write files" → "concatenate and write files?"). The heading and the menu lines that repeat it
// (in the parent node) are taken out before ingest, so a question cannot simply be found as written.
// Not in the fitting set of ranking/params.json; the constants of issue 37.6 (REPEAT_SHARE, PAIR_WEIGHT)
// were chosen with it in view beside the manual pages, so it checks them less strictly than unseen text would.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import type { HeldOut } from './heldout'

const DIR = '/usr/share/info'
const TEMPLATES = [(h: string) => `${h}?`, (h: string) => `how does ${h} work`, (h: string) => `where can I read about ${h}`, (h: string) => `tell me about ${h}`]
const UNDERLINE = /^[*=\-.]{3,}$/

/** Nodes of the Info manuals (indices and tiny nodes aside), with a question from each heading of three words or more, every `stride`-th kept (at most `limit`). */
export function heldOutInfo(limit = 600): HeldOut | null {
  if (!existsSync(DIR)) return null
  const documents: HeldOut['documents'] = []
  const candidates: HeldOut['questions'] = []
  for (const file of readdirSync(DIR).sort()) {
    if (!/\.info(-\d+)?\.gz$/.test(file)) continue
    const text = gunzipSync(readFileSync(join(DIR, file))).toString('utf8')
    for (const part of text.split('\x1f')) {
      const header = /^\n?File: ([^,]+),\s+Node: ([^,\n]+)/.exec(part)
      if (!header) continue
      const node = header[2]!.trim()
      if (/index$/i.test(node) || node === 'Top') continue
      const lines = part.replace(/^\n?File:[^\n]*\n/, '').split('\n')
      const at = lines.findIndex((line, i) => i + 1 < lines.length && UNDERLINE.test(lines[i + 1]!.trim()) && line.trim().length > 0)
      if (at < 0) continue
      const heading = lines[at]!.replace(/^[\d.A-Z]+\s+(?=\S)/, (m) => (/\d/.test(m) ? '' : m)).trim()
      lines.splice(at, 2)
      // Menu lines ("* Node:: Description.") repeat the headings of the nodes below.
      const content = lines.filter((line) => !/^\* [^:]+::/.test(line) && !/^\* Menu:/.test(line)).join('\n').replace(/\n{3,}/g, '\n\n').trim()
      if (content.length < 400) continue
      // An id that names neither the node nor its heading: the node's name is often its heading.
      const id = `info/${file.replace(/\.info(-\d+)?\.gz$/, '')}/${documents.length}`
      documents.push({ id, content })
      const described = (/^.*?:\s+(.+)$/.exec(heading)?.[1] ?? heading).replace(/[‘’'`]/g, '').replace(/\.$/, '').trim()
      if (described.split(/\s+/).length >= 3) candidates.push({ question: described.toLowerCase(), document: id })
    }
  }
  if (!documents.length) return null
  // A heading several nodes share names none of them.
  const counts = new Map<string, number>()
  for (const q of candidates) counts.set(q.question.toLowerCase(), (counts.get(q.question.toLowerCase()) ?? 0) + 1)
  const unique = candidates.filter((q) => counts.get(q.question.toLowerCase()) === 1)
  const stride = Math.max(1, Math.floor(unique.length / limit))
  const questions = unique.filter((_, i) => i % stride === 0).slice(0, limit).map((q, i) => ({ question: TEMPLATES[i % TEMPLATES.length]!(q.question), document: q.document }))
  return { documents, questions }
}
