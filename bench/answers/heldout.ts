// Held-out real documentation (issue 37, point 6): this machine's manual pages, none of which any
// setting was fitted or tuned on, and questions a person would ask for them: each page's own
// one-line description (its NAME section, "tar - an archiving utility") asked as "how do I …" /
// "which command …", the page expected among the first ten results. The descriptions are taken out
// of the pages before they are ingested, so a question cannot simply be found as written.
// The manual pages the refusal family uses as noise (the first 300) are left out, and so are
// gcloud's 16,000 generated pages and Git's (the Git manual is in the labelled ranking set); files of /usr/share/doc are added as noise.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import type { IngestDocument } from '../../src/modules/rag/service'
import { docFiles, roffText } from './refusal'

export interface HeldOut {
  documents: IngestDocument[]
  questions: { question: string; document: string }[]
}

const read = (path: string) => (path.endsWith('.gz') ? gunzipSync(readFileSync(path)).toString('utf8') : readFileSync(path, 'utf8'))
const TEMPLATES = [(d: string) => `how do I ${d}`, (d: string) => `which command can ${d}`, (d: string) => `what tool is there to ${d}`, (d: string) => `${d}?`]

/** Manual pages past the first `skip` (sections 1, 8, 5; gcloud's left out), at most `limit`, with a question for each that has a description of three words or more. */
export function heldOut(limit = 600, skip = 300, noise = 300): HeldOut | null {
  const documents: IngestDocument[] = []
  const questions: { question: string; document: string }[] = []
  const seen = new Map<string, number>()
  let index = 0
  for (const section of ['man1', 'man8', 'man5']) {
    const dir = join('/usr/share/man', section)
    if (!existsSync(dir)) continue
    for (const name of readdirSync(dir).sort()) {
      if (documents.length >= limit) break
      if (/^(gcloud|git)/.test(name)) continue
      const path = join(dir, name)
      if (!statSync(path).isFile()) continue
      const source = read(path)
      if (index++ < skip) continue
      const match = /^\.SH\s+"?NAME"?\s*\n([\s\S]*?)\n\.SH/m.exec(source)
      const line = match ? roffText(match[1]!).replace(/\s+/g, ' ').trim() : ''
      const description = /\s[-–—]\s+(.+)$/.exec(line)?.[1]?.replace(/\.$/, '').trim()
      const text = roffText(source.replace(match?.[0] ?? '', '.SH'))
      if (text.length < 1500 || text.length > 400_000) continue
      const id = `man/${section}/${name}`
      documents.push({ id, content: text, metadata: { title: name.replace(/\.gz$/, '') } })
      if (description && description.split(' ').length >= 3) {
        const key = description.toLowerCase()
        seen.set(key, (seen.get(key) ?? 0) + 1)
        const lowered = description.charAt(0).toLowerCase() + description.slice(1)
        questions.push({ question: TEMPLATES[questions.length % TEMPLATES.length]!(lowered), document: id })
      }
    }
  }
  if (!documents.length) return null
  // A description two pages share ("manual page for …") names neither.
  const unique = questions.filter((q) => {
    const d = documents.find((doc) => doc.id === q.document)!
    return [...seen].every(([key, n]) => n === 1 || !q.question.toLowerCase().includes(key)) && d
  })
  return { documents: [...documents, ...docFiles(noise, /^$/)], questions: unique }
}
