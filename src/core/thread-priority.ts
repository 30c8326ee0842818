import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'

/**
 * Gives the calling thread (Linux: niceness is per thread; threads it starts afterwards inherit it)
 * a niceness, so that when it wants the same core as the request thread, the scheduler prefers the
 * request thread; on an idle core it runs at full speed all the same. Elsewhere, or where it is not
 * allowed, nothing changes.
 */
export function niceThisThread(niceness: number): void {
  try {
    // This thread's own id (not the process's): /proc/thread-self is /proc/<pid>/task/<tid>.
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), niceness)
  } catch {
    // Not Linux, or not allowed: the thread runs at the process's priority.
  }
}
