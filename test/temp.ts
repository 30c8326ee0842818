import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made: string[] = []

/** A fresh `uagent-<prefix>-*` folder in the temp dir; removed after the last test file (test/setup.ts). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `uagent-${prefix}-`))
  made.push(dir)
  return dir
}

/** Removes every folder tempDir() made. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}
