import { SaxesParser, type SaxesTagPlain } from 'saxes'
import { Deadline } from './limits'
import { ExtractionError } from './types'

export interface XmlHandlers {
  open?(name: string, attributes: Record<string, string>): void
  close?(name: string): void
  text?(text: string): void
}

/**
 * Walks an XML part of an office file or e-book with a strict streaming parser. Only the five
 * predefined entities and character references are expanded: a DOCTYPE's entities (internal or
 * pointing outside the file) are never read, and a reference to one makes the file unreadable.
 */
export function walkXml(xml: string, what: string, handlers: XmlHandlers, deadline?: Deadline): void {
  const parser = new SaxesParser({ xmlns: false })
  let failure: Error | null = null
  parser.on('error', (error) => {
    failure ??= error
  })
  let seen = 0
  parser.on('opentag', (tag: SaxesTagPlain) => {
    if (++seen % 5000 === 0) deadline?.check()
    handlers.open?.(tag.name, tag.attributes as Record<string, string>)
  })
  if (handlers.close) parser.on('closetag', (tag) => handlers.close!(tag.name))
  if (handlers.text) {
    parser.on('text', (text) => handlers.text!(text))
    parser.on('cdata', (text) => handlers.text!(text))
  }
  try {
    parser.write(xml).close()
  } catch (error) {
    if (error instanceof ExtractionError) throw error
    failure ??= error as Error
  }
  if (failure) throw new ExtractionError(`not a readable ${what} (invalid XML: ${failure.message.split('\n')[0]})`)
}

/** The text of the first element named `tag` (e.g. `dc:title`), or null. */
export function firstText(xml: string | null, tag: string): string | null {
  if (!xml) return null
  let depth = 0
  let text = ''
  let found = false
  try {
    walkXml(xml, 'file', {
      open: (name) => {
        if (!found && name === tag) depth++
      },
      close: (name) => {
        if (depth && name === tag) {
          depth--
          if (!depth) found = true
        }
      },
      text: (t) => {
        if (depth && !found) text += t
      },
    })
  } catch {
    return null
  }
  return text.trim().replace(/\s+/g, ' ') || null
}
