import { DAY, HOUR, MINUTE } from './recorder'

export const TIME_RANGES = ['1h', '24h', '7d', '30d'] as const
export type TimeRange = (typeof TIME_RANGES)[number]

const BUCKETS: Record<TimeRange, { size: number; count: number }> = {
  '1h': { size: MINUTE, count: 60 },
  '24h': { size: HOUR, count: 24 },
  '7d': { size: HOUR, count: 7 * 24 },
  '30d': { size: DAY, count: 30 },
}

/** A time range cut into buckets: [start, end) in epoch ms, `count` buckets of `size` ms. */
export interface Window {
  start: number
  end: number
  size: number
  count: number
}

/**
 * The buckets of a range, aligned to their size in UTC, oldest first, the last one being the
 * current one: `24h` at 14:20 is 15:00 yesterday up to 15:00 today, in 24 hourly buckets.
 */
export function timeWindow(range: TimeRange, now = Date.now()): Window {
  const { size, count } = BUCKETS[range]
  const end = Math.floor(now / size) * size + size
  return { start: end - count * size, end, size, count }
}

/** Bucket start times as ISO 8601 strings. */
export function bucketStarts(window: Window): string[] {
  return Array.from({ length: window.count }, (_, i) => new Date(window.start + i * window.size).toISOString())
}
