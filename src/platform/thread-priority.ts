import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'

/** Nice value for background worker threads: they run when the main thread does not need the core. */
export const BACKGROUND_NICE = 10

/**
 * Lowers the priority of the calling thread only (Linux: a thread has a nice value of
 * its own, set through its thread id). For worker threads doing throughput work (CSV
 * parsing, checkpoints): when the cores are short, the main thread, which answers
 * requests, runs first and the background work takes what is left. Does nothing where
 * threads have no priority of their own, or when not allowed.
 */
export function lowerThreadPriority(nice: number): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, nice)
  } catch {
    // Not Linux, or no /proc: the thread keeps the process's priority.
  }
}
