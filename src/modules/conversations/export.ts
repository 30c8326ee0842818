import type { Conversation, Message } from './store'

interface ExportSource {
  id?: string
  title?: string
  collection?: string
  chunk?: number
  page?: number
  file?: boolean
}

/** A file name for an exported conversation: its title's letters, digits and dashes (ASCII), or `conversation`. */
export function exportFileName(conversation: Conversation, extension: 'md' | 'json'): string {
  const slug = conversation.title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '')
  return `${slug || 'conversation'}.${extension}`
}

/** The Content-Disposition of a download: an ASCII name, and the title itself (RFC 6266 filename*). */
export function attachment(fileName: string): string {
  return `attachment; filename="${fileName}"; filename*=UTF-8''${encodeURIComponent(fileName)}`
}

function sourcesOf(message: Message): ExportSource[] {
  const sources = message.metadata?.sources
  return Array.isArray(sources) ? (sources as ExportSource[]) : []
}

function speaker(message: Message): string {
  if (message.role === 'user') return 'You'
  if (message.role === 'system') return 'System'
  const model = message.metadata?.model
  return typeof model === 'string' && model ? `Assistant (${model})` : 'Assistant'
}

function describe(source: ExportSource): string {
  const where = source.file ? "a file of this conversation" : source.collection ? `collection ${source.collection}` : ''
  const parts = [source.title ?? source.id ?? 'source', where, source.page !== undefined ? `page ${source.page}` : '', source.chunk !== undefined ? `passage ${source.chunk + 1}` : '']
  return parts.filter(Boolean).join(', ')
}

/**
 * The conversation as Markdown: its title, then each message under who said it and when; a
 * reply's citations `[n]` become footnotes (`[^k]`, numbered through the whole document), defined
 * right after the reply with the source's title, collection (or "a file of this conversation"),
 * page and passage.
 */
export function conversationMarkdown(conversation: Conversation): string {
  const lines = [`# ${conversation.title.replace(/\n/g, ' ')}`, '', `*${conversation.messages.length} messages, ${conversation.createdAt} – ${conversation.updatedAt}*`, '']
  let footnotes = 0
  for (const message of conversation.messages) {
    lines.push(`## ${speaker(message)} · ${message.timestamp}`, '')
    const sources = sourcesOf(message)
    if (!sources.length) {
      lines.push(message.content, '')
      continue
    }
    const numbers = sources.map(() => ++footnotes)
    const cited = new Set<number>()
    const text = message.content.replace(/\[(\d{1,2})\]/g, (whole, n: string) => {
      const index = Number(n) - 1
      if (index < 0 || index >= sources.length) return whole
      cited.add(index)
      return `[^${numbers[index]}]`
    })
    lines.push(text, '')
    // Sources given to the reply but not cited in it are listed too, so nothing it was grounded in is lost.
    const uncited = sources.map((_, index) => index).filter((index) => !cited.has(index))
    if (uncited.length) lines.push(`Sources: ${uncited.map((index) => `[^${numbers[index]}]`).join(' ')}`, '')
    for (const [index, source] of sources.entries()) lines.push(`[^${numbers[index]}]: ${describe(source)}`)
    lines.push('')
  }
  return `${lines.join('\n').trimEnd()}\n`
}

/** The conversation as JSON: as GET /conversations/{id} gives it (messages with their metadata and sources), with the time of the export. */
export function conversationJson(conversation: Conversation): string {
  return `${JSON.stringify({ ...conversation, exportedAt: new Date().toISOString() }, null, 2)}\n`
}
