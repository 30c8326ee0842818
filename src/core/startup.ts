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
