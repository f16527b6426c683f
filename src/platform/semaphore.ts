// A counting semaphore whose waiters may ask to go first: the dispatcher's slots in a
// carrier's window, and (of size 1) a SQLite connection that priority work takes first.

/** At most `size` holders at once; the rest wait in order, those asking first ahead of the others. */
export class Semaphore {
  private free: number
  private readonly waiting: (() => void)[] = []
  private readonly waitingFirst: (() => void)[] = []

  constructor(private readonly size: number) {
    this.free = size
  }

  /** Takes a free slot if there is one (then nobody is waiting either). */
  tryAcquire(): boolean {
    if (this.free === 0) return false
    this.free--
    return true
  }

  /** Resolves true once a slot is held, or false if `signal` aborts first (then no slot is held). */
  acquire(first = false, signal?: AbortSignal): Promise<boolean> {
    if (this.free > 0) {
      this.free--
      return Promise.resolve(true)
    }
    if (signal?.aborted) return Promise.resolve(false)
    return new Promise((resolve) => {
      const queue = first ? this.waitingFirst : this.waiting
      const granted = () => {
        signal?.removeEventListener('abort', aborted)
        resolve(true)
      }
      const aborted = () => {
        const at = queue.indexOf(granted)
        if (at !== -1) queue.splice(at, 1)
        resolve(false)
      }
      signal?.addEventListener('abort', aborted, { once: true })
      queue.push(granted)
    })
  }

  release(): void {
    const next = this.waitingFirst.shift() ?? this.waiting.shift()
    if (next) next()
    else this.free++
  }

  /** Slots held now. */
  get held(): number {
    return this.size - this.free
  }

  /** How many wait for a slot. */
  get queued(): number {
    return this.waitingFirst.length + this.waiting.length
  }
}
