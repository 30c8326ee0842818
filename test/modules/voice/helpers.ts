import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AppOptions, Services } from '../../../src/app'
import { makeServer } from '../../helpers'

/** An in-memory server whose audio goes to a temporary folder, removed by `cleanup`. */
export function makeVoiceServer(options: AppOptions = {}, customize?: (services: Services) => void) {
  const audioDir = mkdtempSync(join(tmpdir(), 'uagent-audio-'))
  const server = makeServer({ audioDir, ...options }, customize)
  return {
    ...server,
    audioDir,
    cleanup() {
      server.services.speech.close()
      server.services.pool.close()
      rmSync(audioDir, { recursive: true, force: true })
    },
  }
}

/** Fetches stored audio through the app. */
export async function fetchAudio(app: { handle(request: Request): Promise<Response> }, url: string, token: string, headers: Record<string, string> = {}) {
  const response = await app.handle(new Request(`http://localhost${url}`, { headers: { authorization: `Bearer ${token}`, ...headers } }))
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) }
}

/** Word error rate: word-level edit distance over the reference's length. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const ref = reference.toLowerCase().split(/\s+/).filter(Boolean)
  const hyp = hypothesis.toLowerCase().split(/\s+/).filter(Boolean)
  const d = Array.from({ length: ref.length + 1 }, (_, i) => Array.from({ length: hyp.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= ref.length; i++) {
    for (let j = 1; j <= hyp.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1))
    }
  }
  return ref.length ? d[ref.length]![hyp.length]! / ref.length : hyp.length ? 1 : 0
}
