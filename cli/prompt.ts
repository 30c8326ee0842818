import { CliError, EXIT } from './client'

/** Asks on the terminal; `hidden` reads without echo (passwords). Needs a TTY on stdin. */
export async function ask(question: string, hidden = false): Promise<string> {
  if (!process.stdin.isTTY) throw new CliError('USAGE', `${question.replace(/:\s*$/, '')} is required (no terminal to ask on)`, EXIT.usage)
  process.stderr.write(question)
  const stdin = process.stdin
  if (!hidden) {
    for await (const line of console) return line.trim()
    return ''
  }
  stdin.setRawMode(true)
  stdin.resume()
  stdin.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    let value = ''
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') {
          finish()
          return resolve(value)
        }
        if (char === '\u0003') {
          finish()
          return reject(new CliError('CANCELLED', 'cancelled', EXIT.usage))
        }
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1)
        else value += char
      }
    }
    const finish = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
    }
    stdin.on('data', onData)
  })
}
