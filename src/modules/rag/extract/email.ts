import type { AddressObject } from 'mailparser'
import { htmlToStructuredText } from './html'
import { checkPageCount, type Deadline } from './limits'
import { type ExtractedPart, ExtractionError } from './types'

/** Reads an attachment through the same extractors as an upload; `depth` stops e-mails nested in e-mails. */
export type AttachmentReader = (fileName: string, bytes: Uint8Array, depth: number) => Promise<string>

type Mailbox = AddressObject['value'][number]
const mailbox = (m: Mailbox): string => (m.group ? m.group.map(mailbox).join(', ') : m.name && m.address ? `${m.name} <${m.address}>` : (m.address ?? m.name ?? ''))
/** Addresses as a person writes them: `Name <address>`, without the quotes of the header. */
const addresses = (value: AddressObject | AddressObject[] | undefined) =>
  value
    ? (Array.isArray(value) ? value : [value])
        .flatMap((a) => a.value.map(mailbox))
        .filter(Boolean)
        .join(', ')
    : ''

/** One e-mail message as text: its headers (From, To, Cc, Date, Subject), the text body, then each attachment's text under its name. */
export async function readMessage(bytes: Uint8Array, readAttachment: AttachmentReader, depth: number, deadline?: Deadline): Promise<{ text: string; title: string | null; messageId: string | null }> {
  // Loaded on the first e-mail: mailparser brings iconv-lite and html-to-text with it.
  const { simpleParser } = await import('mailparser')
  let mail
  try {
    mail = await simpleParser(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { skipImageLinks: true, skipTextToHtml: true })
  } catch (error) {
    throw new ExtractionError(`not a readable e-mail (${(error as Error).message})`)
  }
  deadline?.check()
  const header = [
    ['From', addresses(mail.from)],
    ['To', addresses(mail.to)],
    ['Cc', addresses(mail.cc)],
    ['Date', mail.date ? mail.date.toISOString() : ''],
    ['Subject', mail.subject ?? ''],
  ]
    .filter(([, value]) => value)
    .map(([name, value]) => `${name}: ${value}`)
  const body = (mail.text?.trim() || (mail.html ? htmlToStructuredText(mail.html).text : '')).replace(/\r\n?/g, '\n').trim()
  const parts = [header.join('\n'), body]
  for (const attachment of mail.attachments) {
    if (attachment.related || !attachment.filename) continue
    deadline?.check()
    let text: string
    try {
      text = await readAttachment(attachment.filename, new Uint8Array(attachment.content), depth + 1)
    } catch (error) {
      if (!(error instanceof ExtractionError) || /^(too slow|cancelled)/.test(error.reason)) throw error
      text = `(not read: ${error.reason})`
    }
    parts.push(`## Attachment: ${attachment.filename}\n\n${text}`)
  }
  const text = parts.filter((part) => part.trim()).join('\n\n')
  return { text, title: mail.subject?.trim() || null, messageId: mail.messageId?.replace(/^<|>$/g, '').trim() || null }
}

/**
 * The messages of an mbox file: split at each `From ` line that starts a message (a `>From ` in
 * a body is unescaped, as mboxrd writes it), each read as an e-mail, one document per message
 * with its Message-ID as its id in the file (`message-<n>` for a message without one).
 */
export async function readMbox(bytes: Uint8Array, readAttachment: AttachmentReader, deadline?: Deadline, onMessage?: (done: number, total: number) => void): Promise<ExtractedPart[]> {
  const source = new TextDecoder('latin1').decode(bytes)
  const starts: number[] = []
  const separator = /(^|\n)From [^\n]*\n/g
  for (let match; (match = separator.exec(source)); ) starts.push(match.index + match[1]!.length)
  if (!starts.length || starts[0]! > 0) throw new ExtractionError('not a readable mbox (it does not start with a "From " line)')
  checkPageCount(starts.length, 'messages')
  const messages: ExtractedPart[] = []
  for (let i = 0; i < starts.length; i++) {
    const raw = source.slice(source.indexOf('\n', starts[i]!) + 1, starts[i + 1] ?? source.length).replace(/^>(>*From )/gm, '$1')
    const message = await readMessage(new Uint8Array(Buffer.from(raw, 'latin1')), readAttachment, 0, deadline)
    messages.push({ id: message.messageId ?? `message-${i + 1}`, title: message.title ?? `Message ${i + 1}`, type: 'email', text: message.text })
    onMessage?.(i + 1, starts.length)
  }
  return messages
}
