import type { RequestRecord } from '../../../src/modules/analytics/recorder'

/** Parses CSV as RFC 4180 has it: quoted fields may hold commas, doubled quotes and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (char === '"') quoted = false
      else field += char
    } else if (char === '"') quoted = true
    else if (char === ',') {
      row.push(field)
      field = ''
    } else if (char === '\r' && text[i + 1] === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      i++
    } else field += char
  }
  if (field || row.length) {
    row.push(field)
    rows.push(row)
  }
  return rows
}

export interface PromSample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Parses the Prometheus text exposition format; throws on any line that is not valid in it. */
export function parsePrometheus(text: string): PromSample[] {
  const samples: PromSample[] = []
  const typed = new Set<string>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (comment) {
      if (comment[1] === 'TYPE') {
        if (!/^(counter|gauge|histogram|summary|untyped)$/.test(comment[3]!)) throw new Error(`bad TYPE line: ${line}`)
        typed.add(comment[2]!)
      }
      continue
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?(?:[0-9.e+-]+|NaN|\+Inf|-Inf))(?: -?\d+)?$/.exec(line)
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`)
    const labels: Record<string, string> = {}
    const body = match[2] ?? ''
    const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy
    let consumed = 0
    for (let m = label.exec(body); m; m = label.exec(body)) {
      labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')
      consumed = label.lastIndex
    }
    if (consumed !== body.length) throw new Error(`bad labels in: ${line}`)
    const name = match[1]!
    const family = name.replace(/_(bucket|sum|count|total)$/, '')
    if (!typed.has(name) && !typed.has(family)) throw new Error(`sample without a TYPE line: ${line}`)
    samples.push({ name, labels, value: Number(match[3]) })
  }
  return samples
}

/** The value of the one sample with this name and (at least) these labels. */
export function sample(samples: PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

/** A record as the recorder stores it, with defaults. */
export function record(fields: Partial<RequestRecord> & { ts: number }): RequestRecord {
  return { method: 'GET', route: '/test', status: 200, durationMs: 10, userId: null, promptTokens: 0, completionTokens: 0, model: null, ...fields }
}
