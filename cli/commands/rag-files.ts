import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, extname, join, relative } from 'node:path'
import { CliError, EXIT } from '../client'

export const TEXT_EXTENSIONS = new Set(['.txt', '.md', '.markdown', '.json', '.csv', '.html', '.htm'])

export interface FileDocument {
  id: string
  content: string
  metadata: { title: string; path: string }
}

/** Visible text of an HTML page: scripts, styles and tags removed, entities decoded, paragraphs kept. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style|noscript)[^>]*>[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<\/(p|div|h[1-6]|li|tr|section|article|br)\s*>|<br\s*\/?>/gi, '\n\n')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/[ \t]+/g, ' ')
    .replace(/\n\s*\n(\s*\n)+/g, '\n\n')
    .trim()
}

function readDocument(path: string, id: string): FileDocument {
  const raw = readFileSync(path, 'utf8')
  // A NUL byte never occurs in text: this is a PDF, an image or an archive, which would be stored as garbage.
  if (raw.includes('\u0000')) throw new CliError('USAGE', `${path} is not a text file (ingest .txt .md .json .csv .html, or other plain text)`, EXIT.usage)
  const ext = extname(path).toLowerCase()
  return { id, content: ext === '.html' || ext === '.htm' ? htmlToText(raw) : raw, metadata: { title: basename(path), path } }
}

/**
 * Documents from files and folders. Folders are walked recursively for .txt .md .json .csv .html;
 * a file named directly may be any plain text. A file's id is its path relative to the folder it
 * was found in, or its name when given directly.
 */
export function collectDocuments(inputs: string[]): FileDocument[] {
  const documents: FileDocument[] = []
  for (const input of inputs) {
    let stats
    try {
      stats = statSync(input)
    } catch {
      throw new CliError('USAGE', `no such file or folder: ${input}`, EXIT.usage)
    }
    if (stats.isFile()) {
      documents.push(readDocument(input, basename(input)))
      continue
    }
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.name.startsWith('.')) continue
        const path = join(dir, entry.name)
        if (entry.isDirectory()) walk(path)
        else if (entry.isFile() && TEXT_EXTENSIONS.has(extname(entry.name).toLowerCase())) documents.push(readDocument(path, relative(input, path)))
      }
    }
    walk(input)
  }
  return documents
}

/** Groups documents into requests of at most `maxDocs` documents and about `maxBytes` of content. */
export function batches<T extends { content: string }>(documents: T[], maxDocs = 50, maxBytes = 4 * 1024 * 1024): T[][] {
  const out: T[][] = []
  let current: T[] = []
  let size = 0
  for (const document of documents) {
    const bytes = Buffer.byteLength(document.content)
    if (current.length && (current.length >= maxDocs || size + bytes > maxBytes)) {
      out.push(current)
      current = []
      size = 0
    }
    current.push(document)
    size += bytes
  }
  if (current.length) out.push(current)
  return out
}
