import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { trackProcess } from './processes'

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
  /** Kills it for good and removes its folder. */
  stop(): Promise<void>
}

const running = new Set<TestRedis>()

/**
 * Stops every Redis server startRedis() started and has not stopped: each test file that starts
 * one calls it in an afterAll of its own (which runs even when a test failed). Left running at the
 * end of the run, one fails it (test/setup.ts).
 */
export async function stopRedisServers(): Promise<void> {
  await Promise.all([...running].map((redis) => redis.stop()))
}

/** A Redis server of this test file's own, on a free port, without persistence; stopped by stop() or stopRedisServers(). */
export async function startRedis(): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error('redis-server is not installed')
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'uagent-redis-'))
  let child: Bun.Subprocess | null = null
  const kill = async () => {
    if (!child) return
    const stopping = child
    child = null
    stopping.kill('SIGKILL')
    await stopping.exited
  }
  const start = async () => {
    child = Bun.spawn([REDIS_SERVER!, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdout: 'ignore', stderr: 'ignore' })
    trackProcess(child)
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
  const redis: TestRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: start,
    async stop() {
      running.delete(redis)
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  running.add(redis)
  await start()
  return redis
}
