import { type HTMLElement, type Node, NodeType, parse } from 'node-html-parser'

const DROPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'head', 'button', 'select'])
const BLOCKS = new Set([
  'p', 'div', 'section', 'article', 'main', 'header', 'footer', 'nav', 'aside', 'blockquote', 'figure', 'figcaption',
  'form', 'fieldset', 'address', 'details', 'summary', 'dl', 'dt', 'dd', 'table', 'thead', 'tbody', 'tfoot', 'hr', 'body', 'html',
])
const HEADINGS: Record<string, number> = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 }
/** Marks a protected block (a <pre>) in the text while white space is normalised. */
const SLOT = (n: number) => `\u0000${n}\u0000`

/**
 * The visible text of an HTML page, structured as Markdown would write it: headings as `#` lines,
 * paragraphs separated by blank lines, list items as `- ` / `1. ` lines, table rows as `a | b`,
 * preformatted text kept verbatim in a fenced block. Scripts, styles and other invisible parts are
 * dropped; entities are decoded by the parser.
 */
export function htmlToStructuredText(html: string): { text: string; title: string | null } {
  const root = parse(html, { comment: false, blockTextElements: { script: true, style: true, noscript: true, pre: true } })
  const title = root.querySelector('title')?.text.replace(/\s+/g, ' ').trim() || null
  const verbatim: string[] = []
  let out = ''
  const block = () => {
    out += '\n\n'
  }
  const walk = (node: Node, listDepth: number) => {
    if (node.nodeType === NodeType.TEXT_NODE) {
      out += node.text.replace(/[\s\u00a0]+/g, ' ')
      return
    }
    if (node.nodeType !== NodeType.ELEMENT_NODE) return
    const element = node as HTMLElement
    const tag = element.rawTagName?.toLowerCase() ?? ''
    if (DROPPED.has(tag) || element.getAttribute('hidden') !== undefined || element.getAttribute('aria-hidden') === 'true') return
    if (tag === 'br') {
      out += '\n'
      return
    }
    if (tag === 'pre') {
      verbatim.push(element.text.replace(/^\n/, '').trimEnd())
      out += `\n\n${SLOT(verbatim.length - 1)}\n\n`
      return
    }
    if (tag in HEADINGS) {
      out += `\n\n${'#'.repeat(HEADINGS[tag]!)} `
      for (const child of element.childNodes) walk(child, listDepth)
      out += '\n\n'
      return
    }
    if (tag === 'ul' || tag === 'ol') {
      out += '\n'
      let n = 0
      for (const child of element.childNodes) {
        if (child.nodeType === NodeType.ELEMENT_NODE && (child as HTMLElement).rawTagName?.toLowerCase() === 'li') {
          n++
          out += `\n${'  '.repeat(listDepth)}${tag === 'ol' ? `${n}.` : '-'} `
          for (const grandchild of child.childNodes) walk(grandchild, listDepth + 1)
        } else walk(child, listDepth)
      }
      out += '\n\n'
      return
    }
    if (tag === 'tr') {
      const cells = element.childNodes.filter((c) => c.nodeType === NodeType.ELEMENT_NODE).map((c) => c.text.replace(/[\s\u00a0]+/g, ' ').trim())
      out += `\n| ${cells.join(' | ')} |`
      return
    }
    const isBlock = BLOCKS.has(tag)
    if (isBlock) block()
    for (const child of element.childNodes) walk(child, listDepth)
    if (isBlock) block()
  }
  walk(root, 0)
  const text = out
    .split('\n')
    .map((line) => {
      const indent = /^ */.exec(line)![0]
      const body = line.replace(/ +/g, ' ').trim()
      // List nesting is the only indentation that means something here.
      return /^([-]|\d+\.) /.test(body) ? indent + body : body
    })
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
    .replace(/\u0000(\d+)\u0000/g, (_, n: string) => `\`\`\`\n${verbatim[Number(n)]}\n\`\`\``)
  return { text, title }
}
