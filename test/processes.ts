import { readdirSync, readFileSync } from 'node:fs'

/**
 * Processes the tests start (redis-server, servers, slapd, …): each test file stops what it started
 * in an afterAll that runs even when a test failed. What is left at the end of the run is killed
 * there (test/setup.ts) and fails the run, naming it; a run cut short kills them as it exits.
 */

/** Process groups of their own that tests started (a server and whatever it spawned). */
const groups = new Set<number>()
const children = new Set<number>()

/** Notes a child process, to be killed at exit if it is still running then; with `group`, its whole process group (Bun.spawn({ detached: true })). */
export function trackProcess(child: { pid: number; exited: Promise<unknown> }, group = false): void {
  children.add(child.pid)
  if (group) groups.add(child.pid)
  void child.exited.then(() => {
    children.delete(child.pid)
    // The group may outlive its leader: it is looked for at the end of the run by its id.
  })
}

/**
 * Kills a process group started with Bun.spawn({ detached: true }) (its leader's pid), and forgets
 * it: its id may be given to another process group later.
 */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {
    // Already gone.
  }
  groups.delete(pid)
}

interface Running {
  pid: number
  command: string
}

/** Processes still running (not zombies) that are children of this process, or in a process group a test started. */
export function leftRunning(): Running[] {
  const left: Running[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    if (pid === process.pid) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (state === 'Z' || state === 'X') continue
      if (Number(ppid) !== process.pid && !groups.has(Number(pgrp))) continue
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
      left.push({ pid, command })
    } catch {
      // Ended while being read.
    }
  }
  return left
}

/** Kills what leftRunning() finds; what it killed. */
export function killLeftovers(): Running[] {
  const left = leftRunning()
  for (const group of [...groups]) killGroup(group)
  for (const { pid } of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
  return left
}

// A run that ends early (an uncaught error, Ctrl-C) kills them too: only the synchronous kill runs at exit.
process.on('exit', () => {
  for (const group of [...groups]) killGroup(group)
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
})
