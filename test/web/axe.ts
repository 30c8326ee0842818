import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

/** A WCAG 2 A/AA rule that failed, with the elements that failed it. */
export interface Violation {
  id: string
  impact: string | null
  help: string
  targets: string[]
}

/**
 * axe-core's WCAG 2.0/2.1 A and AA checks on the page as it is now (injected through the
 * DevTools protocol, which the app's CSP does not govern): the rules that failed.
 */
export async function axeViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE)
  const result = (await page.evaluate(`window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })`)) as {
    violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[]
    passes: unknown[]
  }
  // A check that ran no rule (axe not loaded, an empty page) would pass anything.
  if (result.passes.length < 5) throw new Error(`axe-core ran only ${result.passes.length} passing rules: the page was not checked`)
  return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }))
}
