// A counting semaphore whose waiters may ask to go first: the dispatcher's slots in a carrier's window.

/** At most `size` holders at once; the rest wait in order, those asking first ahead of the others. */
export class Semaphore {
  private free: number
  private readonly waiting: (() => void)[] = []
  private readonly waitingFirst: (() => void)[] = []

  constructor(size: number) {
    this.free = size
  }

  acquire(first = false): Promise<void> {
    if (this.free > 0) {
      this.free--
      return Promise.resolve()
    }
    return new Promise((resolve) => (first ? this.waitingFirst : this.waiting).push(resolve))
  }

  release(): void {
    const next = this.waitingFirst.shift() ?? this.waiting.shift()
    if (next) next()
    else this.free++
  }
}
