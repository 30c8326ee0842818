import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs'

/**
 * A fault found while the server starts (damaged database, unwritable data dir, schema from a
 * newer version, unreadable key file). Its message says what is wrong and what to do; the entry
 * point prints it alone (no stack trace) and exits non-zero.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'StartupError'
  }
}

/** The data dir exists (made when missing) and this process may write in it; a StartupError otherwise. */
export function assertWritableDir(dir: string): void {
  const fail = (problem: string) =>
    new StartupError(
      `The data dir ${dir} cannot be written (${problem}): give the user running the server write access to it, or set UAGENT_DATA_DIR to a folder it can write.`,
    )
  try {
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 })
    if (!statSync(dir).isDirectory()) throw fail('it is not a folder')
    accessSync(dir, constants.W_OK)
  } catch (error) {
    if (error instanceof StartupError) throw error
    throw fail((error as { code?: string }).code ?? (error as Error).message)
  }
}
