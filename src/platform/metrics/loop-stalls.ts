import { Counter, type Registry } from 'prom-client'

const TICK_MS = 10
/** A run of the event loop longer than this delays every request of every tenant noticeably. */
export const STALL_MS = 20

interface Slice {
  work: string
  stalled: boolean
}

/**
 * Counts the times the event loop was held over STALL_MS at once, and which background
 * work was under way when it was. A timer ticks every TICK_MS; a tick that comes more
 * than STALL_MS late ends a stall. Background work runs in slices (a dispatch batch, a
 * chunk of a broadcast's recipients, a batch of receipts, ...), each run through
 * `slice()`: a slice under way during a stall, or ended since the tick before it, counts
 * as one over STALL_MS. A request's work during the slice would be counted against it
 * too: the count is an upper bound for the slice, exact for the loop.
 */
export class LoopStalls {
  private readonly stalls: Counter
  private readonly slices: Counter<'work'>
  private readonly slow: Counter<'work'>
  private readonly underWay = new Set<Slice>()
  /** Slices ended since the last tick, not yet known to be clear of a stall. */
  private endedSinceTick: Slice[] = []
  private readonly timer: NodeJS.Timeout | undefined

  constructor(registry: Registry, watch: boolean) {
    this.stalls = new Counter({
      name: 'event_loop_stalls_total',
      help: `Times this node's event loop was held over ${STALL_MS} ms at once (seen by a ${TICK_MS} ms timer): every request waited that long.`,
      registers: [registry],
    })
    this.slices = new Counter({ name: 'background_slices_total', help: 'Slices of background work run on the event loop, by work.', labelNames: ['work'], registers: [registry] })
    this.slow = new Counter({
      name: 'background_slices_over_20ms_total',
      help: `Slices of background work during which the event loop was held over ${STALL_MS} ms at once, by work.`,
      labelNames: ['work'],
      registers: [registry],
    })
    if (!watch) return
    let last = performance.now()
    this.timer = setInterval(() => {
      const now = performance.now()
      if (now - last - TICK_MS > STALL_MS) this.stalled()
      this.endedSinceTick = []
      last = now
    }, TICK_MS)
    this.timer.unref()
  }

  /** Runs one slice of background work, counted by `work` (a closed set of names). */
  async slice<T>(work: string, run: () => Promise<T>): Promise<T> {
    const slice: Slice = { work, stalled: false }
    this.underWay.add(slice)
    this.slices.inc({ work })
    try {
      return await run()
    } finally {
      this.underWay.delete(slice)
      if (slice.stalled) this.slow.inc({ work })
      else if (this.timer) this.endedSinceTick.push(slice)
    }
  }

  stop(): void {
    clearInterval(this.timer)
  }

  private stalled(): void {
    this.stalls.inc()
    for (const slice of this.underWay) slice.stalled = true
    for (const slice of this.endedSinceTick) this.slow.inc({ work: slice.work })
  }
}
