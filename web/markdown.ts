import DOMPurify from 'dompurify'
import { Marked } from 'marked'

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // Each code block gets a copy button (handled by one delegated click listener, see onCopyClick).
    code({ text, lang }) {
      const language = lang ? ` data-lang="${escapeHtml(lang)}"` : ''
      return `<div class="code"><button type="button" data-copy="1" aria-label="Copy code">Copy</button><pre><code${language}>${escapeHtml(text)}</code></pre></div>`
    },
  },
})

/**
 * Markdown → sanitized HTML. With `citations` > 0, each [n] (1 ≤ n ≤ citations) outside code
 * becomes a button that opens source n.
 */
export function renderMarkdown(text: string, citations = 0): string {
  let html = marked.parse(text, { async: false })
  if (citations > 0) {
    // Split on code so that [n] inside code stays text.
    html = html
      .split(/(<pre>[\s\S]*?<\/pre>|<code>[\s\S]*?<\/code>)/)
      .map((part, index) =>
        index % 2 === 1
          ? part
          : part.replace(/\[(\d{1,3})\]/g, (match, n: string) =>
              Number(n) >= 1 && Number(n) <= citations ? `<button type="button" class="cite" data-cite="${n}" aria-label="Open source ${n}">[${n}]</button>` : match,
            ),
      )
      .join('')
  }
  return DOMPurify.sanitize(html, { ADD_ATTR: ['data-cite', 'data-copy', 'data-lang'] })
}

/** A click on a code block's copy button copies the block's text and says so on the button. */
export function onCopyClick(event: MouseEvent): boolean {
  const button = (event.target as Element).closest?.('button[data-copy]') as HTMLButtonElement | null
  if (!button) return false
  const code = button.parentElement?.querySelector('code')?.textContent ?? ''
  navigator.clipboard.writeText(code).then(
    () => (button.textContent = 'Copied'),
    () => (button.textContent = 'Copy failed'),
  )
  setTimeout(() => (button.textContent = 'Copy'), 1500)
  return true
}
