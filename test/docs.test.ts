import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CLI_PAGE, CONFIG_BEGIN, CONFIG_END, CONFIG_PAGE, cliReference, configurationPage, configurationRows, ROOT } from '../scripts/gen-docs'

// The generated references must describe the code as it is: regenerated in memory and compared.
const read = (page: string) => readFileSync(join(ROOT, page), 'utf8')
const STALE = 'is stale: run `bun scripts/gen-docs.ts` and commit the result'

describe('generated references', () => {
  test('docs/cli.md is the uagent program as it is', () => {
    const page = read(CLI_PAGE)
    expect(page === cliReference(), `${CLI_PAGE} ${STALE}`).toBe(true)
    // What a reader looks for is there: every top-level command, and a subcommand's options.
    for (const command of ['login', 'chat', 'rag', 'agents', 'plugins', 'keys', 'admin', 'voice', 'analytics']) expect(page).toContain(`### \`uagent ${command}\``)
    expect(page).toContain('#### `uagent rag sync`')
    expect(page).toContain('`--delete`')
  })

  test("docs/configuration.md's table is src/config.ts as it is", () => {
    const page = read(CONFIG_PAGE)
    expect(page === configurationPage(page), `the table of ${CONFIG_PAGE} ${STALE}`).toBe(true)
    expect(page).toContain('| `UAGENT_DATA_DIR` | `./data` |')
    expect(page).toContain('| `UAGENT_RATE_LIMIT_MAX` | `300` |')
  })

  test('a stale table, or a variable without a comment, is caught', () => {
    const page = `# Configuration\n\n${CONFIG_BEGIN}\n\n| variable | default | meaning |\n|---|---|---|\n| \`PORT\` | \`80\` | old |\n\n${CONFIG_END}\n\nMore prose.\n`
    const fresh = configurationPage(page)
    expect(fresh).not.toBe(page)
    expect(fresh).toContain('| `PORT` | `3000` |')
    expect(fresh.endsWith(`${CONFIG_END}\n\nMore prose.\n`)).toBe(true)

    const source = readFileSync(join(ROOT, 'src/config.ts'), 'utf8')
    const undocumented = source
      .replace('  environment: string\n', '  environment: string\n  widgets: number\n')
      .replace("    environment: text(env, 'NODE_ENV') ?? 'production',\n", "    environment: text(env, 'NODE_ENV') ?? 'production',\n    widgets: integer(env, 'UAGENT_WIDGETS', 3, 1, 9),\n")
    expect(undocumented).not.toBe(source)
    expect(() => configurationRows(undocumented)).toThrow('the Config field widgets (UAGENT_WIDGETS) has no comment')
    const documented = undocumented.replace('  widgets: number\n', '  /** Widgets per page. */\n  widgets: number\n')
    expect(configurationRows(documented)).toContainEqual(['`UAGENT_WIDGETS`', '`3`', 'Widgets per page. Accepts: whole number, 1–9.'])
  })
})
