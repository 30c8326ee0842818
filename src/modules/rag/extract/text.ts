import { ExtractionError } from './types'

/** Extensions of files that are never text: refused as an unsupported type rather than read. */
const BINARY_TYPES = new Set(
  `ico heic psd zip gz tgz bz2 xz 7z rar tar jar war exe dll so dylib bin o a class wasm
  mp3 wav ogg flac m4a aac mp4 mkv mov avi webm doc xls ppt sqlite db woff woff2 ttf otf eot iso dmg`.split(/\s+/),
)

/** Source files: kept as written and typed `code`. */
export const CODE_TYPES = new Set(
  `ts tsx js jsx mjs cjs py rb go rs java kt kts scala c h cc cpp hpp cs swift php pl lua r sh bash zsh fish ps1 sql css scss less
  vue svelte json yaml yml toml ini cfg conf xml proto graphql gradle makefile dockerfile tf hcl ex exs erl hs ml clj dart zig nim`.split(/\s+/),
)

export function unsupportedType(extension: string): string | null {
  if (extension === 'doc') return 'unsupported type: legacy Word .doc (save it as .docx)'
  if (extension === 'xls') return 'unsupported type: legacy Excel .xls (save it as .xlsx)'
  if (extension === 'ppt') return 'unsupported type: legacy PowerPoint .ppt (save it as .pptx)'
  return BINARY_TYPES.has(extension) ? `unsupported type: .${extension} files hold no text to ingest` : null
}

/** Bytes as UTF-8 text; a NUL byte or invalid UTF-8 means a binary file. A byte-order mark is dropped. */
export function decodeText(bytes: Uint8Array): string {
  if (bytes.includes(0)) throw new ExtractionError('binary file: not text (it contains NUL bytes)')
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    throw new ExtractionError('binary file: not valid UTF-8 text')
  }
}

/** A Markdown document's title: front matter `title:`, else its first `#` heading. */
export function markdownTitle(text: string): string | null {
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)
  const fromFront = front && /^title:\s*["']?(.+?)["']?\s*$/m.exec(front[1]!)
  if (fromFront) return fromFront[1]!.trim()
  const heading = /^\s{0,3}#\s+(.+?)\s*#*\s*$/m.exec(text)
  return heading ? heading[1]!.trim() : null
}
