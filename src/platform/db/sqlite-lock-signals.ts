/**
 * What the connections to one SQLite file tell each other about its write lock, through
 * a SharedArrayBuffer of two Int32 slots: how many statements of the requests' connection
 * wait for the lock now, and how many times a writer on another thread (the writer
 * thread, a bulk writer) has let it go. A writer stands back while the first is above
 * zero; a waiting statement sleeps until the second moves (or its retry timer ends), so
 * it takes the lock the moment it is free instead of at its next retry.
 */
const WAITING = 0
const RELEASES = 1

export function newLockSignals(): SharedArrayBuffer {
  return new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT)
}

// The longest a writer stands back for waiting requests before it takes the lock.
const MAX_STAND_BACK_MS = 1_000

/** Blocks a writer's thread (never the main one) while statements of the requests' connection wait for the lock. */
export function standBackForWaiters(signals: Int32Array): void {
  const deadline = Date.now() + MAX_STAND_BACK_MS
  for (let waiting = Atomics.load(signals, WAITING); waiting > 0 && Date.now() < deadline; waiting = Atomics.load(signals, WAITING)) {
    Atomics.wait(signals, WAITING, waiting, 5)
  }
}

/** A writer on another thread has committed or rolled back: wakes the statements waiting for the lock. */
export function announceRelease(signals: Int32Array): void {
  Atomics.add(signals, RELEASES, 1)
  Atomics.notify(signals, RELEASES)
}

/** Statements of the requests' connection waiting for the lock now (metrics). */
export function lockWaiting(signals: Int32Array): number {
  return Atomics.load(signals, WAITING)
}

/** Releases so far: read before an attempt to take the lock, and given to LockWait.until if it was taken. */
export function releases(signals: Int32Array): number {
  return Atomics.load(signals, RELEASES)
}

/**
 * One statement of the requests' connection waiting for the lock: counted while it
 * waits, and woken by a release. `releasesSeen` is read before the attempt that found the
 * lock taken, so that a release in between is not missed.
 */
export class LockWait {
  private counted = false

  constructor(private readonly signals: Int32Array) {}

  /** Resolves at the next release after `seen`, or after `timeoutMs`. */
  async until(seen: number, timeoutMs: number): Promise<void> {
    if (!this.counted) {
      this.counted = true
      Atomics.add(this.signals, WAITING, 1)
    }
    const wait = Atomics.waitAsync(this.signals, RELEASES, seen, timeoutMs)
    if (wait.async) await wait.value
  }

  end(): void {
    if (!this.counted) return
    this.counted = false
    Atomics.sub(this.signals, WAITING, 1)
    Atomics.notify(this.signals, WAITING)
  }
}
