import { randomInt } from 'node:crypto'
import { AppError } from '../../core/errors'
import { hashToken, newOpaqueToken } from '../../core/tokens'
import type { DeviceCodeRow, SsoStore } from './store'

export const DEVICE_CODE_TTL_MS = 10 * 60 * 1000
export const DEVICE_POLL_SECONDS = 5
// No vowels (no words), no look-alikes (0/O, 1/I/L, 5/S, 2/Z).
const ALPHABET = 'BCDFGHJKMNPQRTVWXY'

/** A user code as typed (any case, with or without the dash, spaces) in its stored form `XXXX-XXXX`; null when it cannot be one. */
export function normalizeUserCode(raw: string): string | null {
  const letters = raw.toUpperCase().replace(/[^A-Z]/g, '')
  if (letters.length !== 8 || [...letters].some((char) => !ALPHABET.includes(char))) return null
  return `${letters.slice(0, 4)}-${letters.slice(4)}`
}

function newUserCode(): string {
  const letters = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')
  return `${letters.slice(0, 4)}-${letters.slice(4)}`
}

export interface DeviceGrant {
  deviceCode: string
  userCode: string
  verificationUrl: string
  verificationUrlComplete: string
  interval: number
  expiresIn: number
}

export interface DeviceRequest {
  userCode: string
  status: 'pending' | 'approved' | 'denied' | 'used'
  clientName: string | null
  createdAt: string
  expiresAt: string
}

/**
 * The device authorization flow (RFC 8628, as `gh auth login` does it) for `uagent login --web`:
 * the CLI gets a device code (kept secret, stored hashed) and a short user code that a person
 * approves in the web app; the CLI polls until then. Codes live in the database so that any
 * replica answers, expire after 10 minutes and give one session.
 */
export class DeviceCodes {
  constructor(
    private readonly store: SsoStore,
    private readonly options: { interval?: number; now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  get interval(): number {
    return this.options.interval ?? DEVICE_POLL_SECONDS
  }

  async start(baseUrl: string, clientName: string | null): Promise<DeviceGrant> {
    const now = this.now()
    await this.store.deleteExpired(now - 3600_000)
    const deviceCode = newOpaqueToken()
    for (let attempt = 0; ; attempt++) {
      const row: DeviceCodeRow = {
        device_code_hash: hashToken(deviceCode),
        user_code: newUserCode(),
        status: 'pending',
        user_id: null,
        client_name: clientName,
        interval_seconds: this.interval,
        created_at: new Date(now).toISOString(),
        expires_at: now + DEVICE_CODE_TTL_MS,
        last_poll_at: 0,
      }
      try {
        await this.store.insertDeviceCode(row)
      } catch (error) {
        // Two live codes drew the same user code (1 in 11 billion): draw again.
        if (attempt < 3) continue
        throw error
      }
      const verificationUrl = `${baseUrl}/app/device`
      return {
        deviceCode,
        userCode: row.user_code,
        verificationUrl,
        verificationUrlComplete: `${verificationUrl}?code=${row.user_code}`,
        interval: this.interval,
        expiresIn: DEVICE_CODE_TTL_MS / 1000,
      }
    }
  }

  /** The user id an approved code signs in (once); otherwise the contract's 400 for where it stands. */
  async poll(deviceCode: string): Promise<string> {
    const hash = hashToken(deviceCode)
    const now = this.now()
    const row = await this.store.deviceCodeByHash(hash)
    if (!row || row.expires_at <= now) throw new AppError('EXPIRED_TOKEN', 'This device code is unknown or expired: run uagent login --web again')
    if (row.status === 'used') throw new AppError('EXPIRED_TOKEN', 'This device code was already used: run uagent login --web again')
    if (row.status === 'denied') throw new AppError('ACCESS_DENIED', 'The sign-in was denied in the browser')
    if (row.status === 'approved') {
      const userId = await this.store.useDeviceCode(hash, now)
      if (!userId) throw new AppError('EXPIRED_TOKEN', 'This device code was already used: run uagent login --web again')
      return userId
    }
    // Half a second of slack for the client's timer.
    if (!(await this.store.notePoll(hash, now, now - row.interval_seconds * 1000 + 500))) {
      throw new AppError('SLOW_DOWN', `Polling too fast: wait ${row.interval_seconds} seconds between requests`)
    }
    throw new AppError('AUTHORIZATION_PENDING', 'Waiting for the code to be approved in the browser')
  }

  /** A live code, for the approval page; NOT_FOUND when unknown or expired. */
  async lookup(rawUserCode: string): Promise<DeviceRequest> {
    const userCode = normalizeUserCode(rawUserCode)
    const row = userCode ? await this.store.deviceCodeByUserCode(userCode) : null
    if (!row || row.expires_at <= this.now()) throw new AppError('NOT_FOUND', 'No such code, or it expired: run uagent login --web again for a new one')
    return { userCode: row.user_code, status: row.status, clientName: row.client_name, createdAt: row.created_at, expiresAt: new Date(row.expires_at).toISOString() }
  }

  /** Approves (or denies) a pending code as `userId`; CONFLICT when it was already decided. */
  async decide(rawUserCode: string, approve: boolean, userId: string): Promise<DeviceRequest> {
    const current = await this.lookup(rawUserCode)
    if (!(await this.store.decideDeviceCode(current.userCode, approve ? 'approved' : 'denied', userId, this.now()))) {
      throw new AppError('CONFLICT', 'This code was already approved or denied')
    }
    return { ...current, status: approve ? 'approved' : 'denied' }
  }
}
