import { AppError } from '../../../core/errors'

/** Throws VALIDATION_ERROR naming the field unless `zone` is an IANA time zone this runtime knows. */
export function assertTimeZone(zone: string, field: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    throw new AppError('VALIDATION_ERROR', `${field}: "${zone}" is not an IANA time zone (e.g. "Europe/Paris", "UTC")`)
  }
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/**
 * An ISO 8601 date or date-time. A date alone is midnight UTC; a date-time without an offset is
 * read in `zone` (UTC when none). Anything else is a VALIDATION_ERROR naming the field.
 */
export function parseDateTime(text: string, field: string, zone = 'UTC'): Date {
  const match = ISO_DATE.exec(text.trim())
  const invalid = () => new AppError('VALIDATION_ERROR', `${field}: "${text}" is not an ISO 8601 date or date-time (e.g. "2024-05-01" or "2024-05-01T09:30:00Z")`)
  if (!match) throw invalid()
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '0', offset] = match
  const parts = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const
  const ms = Math.floor(Number(`0.${fraction}`) * 1000)
  const utc = Date.UTC(parts[0], parts[1] - 1, parts[2], parts[3], parts[4], parts[5], ms)
  const check = new Date(utc)
  // Date.UTC rolls over (Feb 30 → Mar 2); a real date comes back with the same fields.
  if (check.getUTCMonth() !== parts[1] - 1 || check.getUTCDate() !== parts[2] || parts[3] > 23 || parts[4] > 59 || parts[5] > 59) throw invalid()
  if (offset === 'Z') return check
  if (offset) {
    const sign = offset.startsWith('-') ? -1 : 1
    const digits = offset.slice(1).replace(':', '')
    const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))
    if (minutes > 18 * 60) throw invalid()
    return new Date(utc - sign * minutes * 60_000)
  }
  if (match[4] === undefined) return check
  // A wall-clock time in a zone: the offset at that moment, found in two steps around DST changes.
  const first = offsetMinutes(new Date(utc), zone)
  const second = offsetMinutes(new Date(utc - first * 60_000), zone)
  return new Date(utc - second * 60_000)
}

/** Minutes east of UTC that `zone` is at `date`. */
export function offsetMinutes(date: Date, zone: string): number {
  const fields = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  )
  const wall = Date.UTC(Number(fields.year), Number(fields.month) - 1, Number(fields.day), Number(fields.hour), Number(fields.minute), Number(fields.second))
  return Math.round((wall - Math.floor(date.getTime() / 1000) * 1000) / 60_000)
}

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, '0')

export function formatOffset(minutes: number): string {
  return `${minutes < 0 ? '-' : '+'}${pad(Math.trunc(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`
}

/** `{ iso, timezone, offset }`: the moment as local time in `zone` with its offset, e.g. "2024-05-01T11:30:00.000+02:00". */
export function describeMoment(date: Date, zone: string) {
  const offset = offsetMinutes(date, zone)
  const local = new Date(date.getTime() + offset * 60_000)
  const iso = `${local.toISOString().slice(0, 23)}${formatOffset(offset)}`
  const weekday = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'long' }).format(date)
  return { iso, timezone: zone, offset: formatOffset(offset), utc: date.toISOString(), unix: Math.floor(date.getTime() / 1000), weekday }
}

export function now(params: { timezone?: string }) {
  const zone = assertTimeZone(params.timezone ?? 'UTC', 'parameters.timezone')
  return describeMoment(new Date(), zone)
}

export function convert(params: { datetime: string; timezone: string; from?: string }) {
  const zone = assertTimeZone(params.timezone, 'parameters.timezone')
  const source = assertTimeZone(params.from ?? 'UTC', 'parameters.from')
  return describeMoment(parseDateTime(params.datetime, 'parameters.datetime', source), zone)
}

/** Calendar difference (years, months, days…) from `a` to `b` with a ≤ b, counted in UTC. */
function calendarDifference(a: Date, b: Date) {
  let months = (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + (b.getUTCMonth() - a.getUTCMonth())
  const shifted = (m: number) => {
    const d = new Date(a.getTime())
    const day = d.getUTCDate()
    d.setUTCDate(1)
    d.setUTCMonth(d.getUTCMonth() + m)
    const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
    d.setUTCDate(Math.min(day, last))
    return d
  }
  while (months > 0 && shifted(months).getTime() > b.getTime()) months--
  let rest = b.getTime() - shifted(months).getTime()
  const days = Math.floor(rest / 86_400_000)
  rest -= days * 86_400_000
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  return { years: Math.floor(months / 12), months: months % 12, days, hours, minutes, seconds: Math.floor(rest / 1000) }
}

export function difference(params: { from: string; to: string; timezone?: string }) {
  const zone = assertTimeZone(params.timezone ?? 'UTC', 'parameters.timezone')
  const from = parseDateTime(params.from, 'parameters.from', zone)
  const to = parseDateTime(params.to, 'parameters.to', zone)
  const milliseconds = to.getTime() - from.getTime()
  const [earlier, later] = milliseconds >= 0 ? [from, to] : [to, from]
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    milliseconds,
    seconds: milliseconds / 1000,
    minutes: milliseconds / 60_000,
    hours: milliseconds / 3_600_000,
    days: milliseconds / 86_400_000,
    weeks: milliseconds / 604_800_000,
    calendar: { sign: milliseconds < 0 ? -1 : 1, ...calendarDifference(earlier, later) },
  }
}
