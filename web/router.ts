import { signal } from '@preact/signals'

/** The page's path below /app ("/chat", "/chat/<id>", …). */
export const route = signal(location.pathname.replace(/^\/app/, '') || '/')

export function navigate(path: string): void {
  history.pushState(null, '', `/app${path}`)
  route.value = path
}

addEventListener('popstate', () => {
  route.value = location.pathname.replace(/^\/app/, '') || '/'
})

/** Links inside the app navigate without a reload (modifier clicks keep the browser's behaviour). */
export function onLinkClick(event: MouseEvent): void {
  const link = (event.target as Element).closest?.('a[href^="/app"]') as HTMLAnchorElement | null
  if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || link.target || link.hasAttribute('download')) return
  event.preventDefault()
  navigate(link.pathname.replace(/^\/app/, '') || '/')
}
