/**
 * Text that PostgreSQL's text columns cannot hold as it is: they refuse the NUL character (U+0000),
 * which SQLite keeps. Such text is stored as a marker (U+FFFF, a noncharacter) followed by the
 * text as a JSON string, where NUL is written `\u0000`; text that starts with the marker itself is
 * stored the same way, so that reading any stored value gives back exactly what was written.
 * Everything else (nearly all text) is stored as it is.
 */
const MARKER = '\uFFFF'

/** The form of `text` a PostgreSQL text column accepts. */
export function toPgText(text: string): string {
  return text.includes('\u0000') || text.startsWith(MARKER) ? `${MARKER}${JSON.stringify(text)}` : text
}

/** The text a value written by toPgText stood for. */
export function fromPgText(stored: string): string {
  if (!stored.startsWith(MARKER)) return stored
  try {
    const text: unknown = JSON.parse(stored.slice(1))
    return typeof text === 'string' ? text : stored
  } catch {
    // Written before this encoding existed: kept as it is.
    return stored
  }
}

/** The PostgreSQL columns whose text goes through toPgText (copies from SQLite encode them too). */
export const ENCODED_TEXT_COLUMNS: Record<string, readonly string[]> = {
  conversations: ['title'],
  messages: ['content'],
}
