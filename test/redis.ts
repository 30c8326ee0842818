import { afterAll } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Debian's redis-server, when installed (.ci/run installs it); without it the Redis tests skip, saying why. */
export const REDIS_SERVER = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim() || null
export const REDIS_SKIPPED = 'skipped: redis-server is not installed'

/** A free TCP port on the loopback address. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface TestRedis {
  url: string
  port: number
  /** Kills the server (SIGKILL): Redis lost. */
  kill(): Promise<void>
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>
}

const running = new Set<Bun.Subprocess>()
afterAll(() => {
  for (const child of running) child.kill('SIGKILL')
})

/** A Redis server of this test file's own, on a free port, without persistence; stopped after the file. */
export async function startRedis(): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error('redis-server is not installed')
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'uagent-redis-'))
  let child: Bun.Subprocess | null = null
  const start = async () => {
    child = Bun.spawn([REDIS_SERVER!, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdout: 'ignore', stderr: 'ignore' })
    running.add(child)
    for (let tries = 0; tries < 100; tries++) {
      try {
        const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
        socket.end()
        return
      } catch {
        await Bun.sleep(20)
      }
    }
    throw new Error(`redis-server did not start on port ${port}`)
  }
  await start()
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async kill() {
      if (!child) return
      child.kill('SIGKILL')
      await child.exited
      running.delete(child)
      child = null
    },
    restart: start,
  }
}
