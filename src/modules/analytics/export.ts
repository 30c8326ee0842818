import type { ExportRow } from './service'

export const EXPORT_FORMATS = ['json', 'csv'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

const COLUMNS = ['timestamp', 'method', 'route', 'status', 'durationMs', 'userId', 'tokens', 'model'] as const satisfies readonly (keyof ExportRow)[]

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled. */
export function csvField(value: string | number | null): string {
  if (value === null) return ''
  const text = String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/**
 * The rows with the first one already read: a database that cannot answer (PostgreSQL lost) fails
 * the request with its status (503), instead of a 200 whose body breaks off.
 */
export async function firstRead<T>(rows: Iterator<T> | AsyncIterator<T>): Promise<Iterator<T> | AsyncIterator<T>> {
  const first = await rows.next()
  let taken = false
  return {
    next: () => {
      if (taken) return rows.next()
      taken = true
      return first
    },
    return: (value?: unknown) => (rows.return ? rows.return(value) : { done: true as const, value: value as T }),
  } as Iterator<T> | AsyncIterator<T>
}

const csvLine = (values: (string | number | null)[]) => `${values.map(csvField).join(',')}\r\n`

/**
 * The rows as a byte stream, produced as the client reads it (a page of rows per pull): a JSON
 * array of row objects, or CSV with a header row and CRLF line ends.
 */
export function exportStream(rows: Iterator<ExportRow> | AsyncIterator<ExportRow>, format: ExportFormat, rowsPerChunk = 500): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let started = false
  let count = 0
  return new ReadableStream<Uint8Array>({
    // (A page read from PostgreSQL arrives later: the pull then waits for each row; SQLite's come at once.)
    async pull(controller) {
      let text = ''
      if (!started) {
        started = true
        text = format === 'csv' ? csvLine([...COLUMNS]) : '['
      }
      for (let i = 0; i < rowsPerChunk; i++) {
        let next = rows.next()
        if (next instanceof Promise) next = await next
        if (next.done) {
          if (format === 'json') text += count ? '\n]\n' : ']\n'
          if (text) controller.enqueue(encoder.encode(text))
          controller.close()
          return
        }
        const row = next.value
        text += format === 'csv' ? csvLine(COLUMNS.map((column) => row[column])) : `${count ? ',' : ''}\n${JSON.stringify(row)}`
        count++
      }
      controller.enqueue(encoder.encode(text))
    },
    cancel() {
      rows.return?.()
    },
  })
}
