import type { Command } from 'commander'
import type { GlobalOptions } from './client'

const useColor = (stream: NodeJS.WriteStream) => stream.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb'

function paint(code: number, stream: NodeJS.WriteStream = process.stdout) {
  return (text: string) => (useColor(stream) ? `\x1b[${code}m${text}\x1b[0m` : text)
}

export const bold = paint(1)
export const dim = paint(2)
export const green = paint(32)
export const red = paint(31, process.stderr)
export const cyan = paint(36)

/** Global options as seen from a subcommand. */
export function globals(command: Command): GlobalOptions {
  return command.optsWithGlobals() as GlobalOptions
}

/** With --json, the API's body as it is; otherwise the human rendering. */
export function emit(command: Command, body: unknown, human: () => void): void {
  if (globals(command).json) process.stdout.write(`${JSON.stringify(body, null, 2)}\n`)
  else human()
}

/** The width tables must fit: the terminal's, else $COLUMNS, else none (output to a file or pipe). */
export function terminalWidth(): number | undefined {
  if (process.stdout.isTTY && process.stdout.columns) return process.stdout.columns
  const columns = Number(process.env.COLUMNS)
  return Number.isInteger(columns) && columns > 20 ? columns : undefined
}

const cut = (text: string, width: number) => (text.length > width ? `${text.slice(0, Math.max(width - 1, 0))}…` : text)

/**
 * Aligned columns that fit the terminal: cells are cut to `max` characters, then the last column
 * (free text), then the widest columns are narrowed (never below 6 characters, the header's width or what fits) until a line fits.
 */
export function table(headers: string[], rows: (string | number)[][], max = 60, width = terminalWidth()): string {
  const cells = rows.map((row) => row.map((cell) => cut(String(cell).replace(/\s+/g, ' '), max)))
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)))
  if (width !== undefined) {
    const total = () => widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1)
    // Free text (the last column: titles, content) gives way first, down to 20 characters.
    const last = widths.length - 1
    if (total() > width && widths[last]! > 20) widths[last] = Math.max(20, widths[last]! - (total() - width))
    while (total() > width) {
      const widest = widths.indexOf(Math.max(...widths))
      const floor = Math.max(6, Math.min(headers[widest]!.length, 12))
      if (widths[widest]! <= floor) break
      widths[widest] = Math.max(floor, widths[widest]! - (total() - width))
    }
  }
  const line = (row: string[]) => row.map((cell, i) => (i === row.length - 1 ? cut(cell, widths[i]!) : cut(cell, widths[i]!).padEnd(widths[i]!))).join('  ')
  return [bold(line(headers)), ...cells.map(line)].join('\n')
}

export function keyValues(pairs: [string, unknown][]): string {
  const width = Math.max(...pairs.map(([key]) => key.length))
  return pairs.map(([key, value]) => `${dim(key.padEnd(width))}  ${value}`).join('\n')
}

/** A one-line progress bar on stderr when it is a terminal; silent otherwise. */
export function progressBar(total: number, label: string) {
  const live = process.stderr.isTTY === true
  return {
    update(done: number) {
      if (!live) return
      const width = 30
      const filled = total ? Math.round((done / total) * width) : width
      process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}`)
    },
    done() {
      if (live) process.stderr.write('\n')
    },
  }
}

/** Help text: one example per command. */
export function example(command: Command, ...lines: string[]): Command {
  return command.addHelpText('after', `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`)
}

/** What a job's progress bar shows of it. */
export interface JobState {
  id: string
  status: string
  progress: number
  files: { name: string; status: string; pages?: number; pagesDone?: number }[]
}

/**
 * A progress bar for one ingestion job on stderr: redrawn in place on a terminal; elsewhere (a pipe,
 * a log) one line per status change and per 10 % step.
 */
export function jobProgressBar(label: string) {
  const live = process.stderr.isTTY === true
  let said = ''
  return {
    update(job: JobState) {
      const pages = job.files.reduce((sum, file) => sum + (file.pages ?? 0), 0)
      const pagesDone = job.files.reduce((sum, file) => sum + (file.pagesDone ?? 0), 0)
      const read = pages ? `, ${pagesDone}/${pages} pages` : ''
      const filesDone = job.files.filter((file) => !['queued', 'running'].includes(file.status)).length
      const detail = `${job.status} ${job.progress}% (${filesDone}/${job.files.length} files${read})`
      if (live) {
        const width = 30
        const filled = Math.round((job.progress / 100) * width)
        process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${detail}\x1b[K`)
        return
      }
      const step = `${job.status} ${Math.floor(job.progress / 10)}`
      if (step === said) return
      said = step
      process.stderr.write(`${label}: ${detail}\n`)
    },
    done() {
      if (live) process.stderr.write('\n')
    },
  }
}
