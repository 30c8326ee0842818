import { InvalidArgumentError } from 'commander'

/**
 * Option parsers: a malformed value is a usage error (exit 2) before any request is sent.
 * Ranges are left to the server, whose message says what it accepts.
 */
export function integer(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected a whole number, got "${value}"`)
  return Number(value)
}

export function decimal(value: string): number {
  const number = Number(value)
  if (value.trim() === '' || !Number.isFinite(number)) throw new InvalidArgumentError(`expected a number, got "${value}"`)
  return number
}
