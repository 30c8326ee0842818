import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import type { AudioFormat } from '../../ml/speech/encoders'
import type { AudioRow, VoiceStore } from './store'

export type { AudioRow }

/** A stored file name: a UUID and a known extension, nothing else (no path can escape the folder). */
export const AUDIO_FILE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(mp3|wav|ogg)$/

/**
 * Synthesized audio: files in one folder, their owners and sizes in the voice store, kept for a
 * while. A store that keeps the bytes (PostgreSQL) gets them too, and audio made by another server
 * on the same database is copied from it into this server's folder when first asked for.
 */
export class AudioStore {
  private lastSweep = 0

  constructor(
    private readonly store: VoiceStore,
    readonly dir: string,
    private readonly retentionMs: number,
  ) {}

  pathOf(id: string, format: AudioFormat): string {
    return join(this.dir, `${id}.${format}`)
  }

  /** A fresh id and the path to write its audio to; the folder is made on first use. */
  reserve(format: AudioFormat): { id: string; path: string } {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const id = crypto.randomUUID()
    return { id, path: this.pathOf(id, format) }
  }

  /** Records audio written to its reserved path (a store that keeps the bytes reads them from there). */
  record(row: Omit<AudioRow, 'created_at'>): MaybePromise<void> {
    const full = { ...row, created_at: new Date().toISOString() }
    if (!this.store.keepsAudioBytes) return andThen(this.store.recordAudio(full), () => this.sweepSometimes())
    return Bun.file(this.pathOf(row.id, row.format))
      .bytes()
      .then((bytes) => this.store.recordAudio(full, bytes))
      .then(() => this.sweepSometimes())
  }

  /** The caller's audio file named `file` (`{id}.{format}`), or null (unknown, someone else's, expired, gone). */
  find(userId: string, file: string): MaybePromise<(AudioRow & { path: string }) | null> {
    const match = AUDIO_FILE.exec(file)
    if (!match) return null
    return andThen(this.store.findAudio(userId, match[1]!, match[2]! as AudioFormat), (row) => {
      if (!row) return null
      if (Date.parse(row.created_at) < Date.now() - this.retentionMs) return null
      const path = this.pathOf(row.id, row.format)
      try {
        statSync(path)
      } catch {
        return this.store.keepsAudioBytes ? this.copyFromStore(row, path) : null
      }
      return { ...row, path }
    })
  }

  /**
   * A store that keeps the bytes: stores those of audio recorded without them (a server moved from
   * SQLite keeps its audio folder) whose file this server has, so that every server can serve
   * them. Returns how many were stored.
   */
  async storeLocalFiles(): Promise<number> {
    if (!this.store.keepsAudioBytes) return 0
    let stored = 0
    for (const row of await this.store.audioWithoutBytes(new Date(Date.now() - this.retentionMs).toISOString())) {
      const file = Bun.file(this.pathOf(row.id, row.format))
      if (!(await file.exists())) continue
      await this.store.attachAudioBytes(row.id, await file.bytes())
      stored++
    }
    return stored
  }

  /** Audio another server made: its bytes from the store, written (whole, then renamed) into this server's folder. */
  private async copyFromStore(row: AudioRow, path: string): Promise<(AudioRow & { path: string }) | null> {
    const bytes = await this.store.audioBytes(row.id)
    if (!bytes) return null
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    const partial = `${path}.${crypto.randomUUID()}.part`
    try {
      writeFileSync(partial, bytes, { mode: 0o600 })
      renameSync(partial, path)
    } catch (error) {
      rmSync(partial, { force: true })
      throw error
    }
    return { ...row, path }
  }

  /** Removes audio older than the retention, files and rows. */
  sweep(now = Date.now()): MaybePromise<number> {
    this.lastSweep = now
    return andThen(this.store.removeAudioBefore(new Date(now - this.retentionMs).toISOString()), (old) => this.sweepFiles(old, now))
  }

  private sweepFiles(old: AudioRow[], now: number): number {
    for (const row of old) rmSync(this.pathOf(row.id, row.format), { force: true })
    // Files whose record went with its user (or a crash between writing and recording) go by age.
    let orphans = 0
    try {
      for (const name of readdirSync(this.dir)) {
        const path = join(this.dir, name)
        // A copy from the store cut short by a crash is `<file>.<uuid>.part`.
        if (AUDIO_FILE.test(name.replace(/\.[0-9a-f-]{36}\.part$/, '')) && statSync(path).mtimeMs < now - this.retentionMs) {
          rmSync(path, { force: true })
          orphans++
        }
      }
    } catch {
      // No folder yet: nothing was ever written.
    }
    this.lastSweep = now
    return old.length + orphans
  }

  private sweepSometimes(): MaybePromise<void> {
    if (Date.now() - this.lastSweep > 60_000) return andThen(this.sweep(), () => {})
  }

  /** Removes a file whose synthesis failed before it was recorded. */
  discard(path: string): void {
    rmSync(path, { force: true })
  }
}
