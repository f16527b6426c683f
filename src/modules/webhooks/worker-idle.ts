// When an idle delivery worker looks for due deliveries again: at the poll, the soonest retry, a wake-up, or soon while deliveries are expected.
import type { Clock } from '../../platform/clock.js'

/** After the fan-out reports new deliveries, how long an empty claim is retried soon (its transaction may not have committed yet). */
const EXPECT_WINDOW_MS = 1000
const EXPECT_FIRST_RETRY_MS = 5

export class IdleWait {
  private wakeUp: (() => void) | undefined
  private woken = false
  /** Until then, an empty claim is tried again soon: the fan-out said deliveries are coming. */
  private expectUntil = 0
  private expectRetryMs = EXPECT_FIRST_RETRY_MS

  constructor(
    private readonly clock: Clock,
    private readonly idlePollMs: number,
  ) {}

  /** Ends the wait under way, or else the next one at once. */
  wake(): void {
    this.woken = true
    this.wakeUp?.()
  }

  /** Deliveries are coming: until EXPECT_WINDOW_MS is over, waits after an empty claim start at EXPECT_FIRST_RETRY_MS and double. */
  expectDeliveries(): void {
    this.expectUntil = this.clock.now().getTime() + EXPECT_WINDOW_MS
    this.expectRetryMs = EXPECT_FIRST_RETRY_MS
    this.wake()
  }

  /** A claim found deliveries: those expected are in. */
  found(): void {
    this.expectUntil = 0
  }

  /** Waits until the poll, the soonest retry this node scheduled (`soonestRetryAt`), or a wake-up. */
  idle(soonestRetryAt: number): Promise<void> {
    if (this.woken) {
      this.woken = false
      return Promise.resolve()
    }
    const now = this.clock.now().getTime()
    const untilRetry = soonestRetryAt - now
    let waitMs = Math.max(5, Math.min(this.idlePollMs, untilRetry))
    if (now < this.expectUntil) {
      waitMs = Math.min(waitMs, this.expectRetryMs)
      this.expectRetryMs *= 2
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakeUp = undefined
        resolve()
      }
      const timer = setTimeout(done, waitMs)
      this.wakeUp = () => {
        this.woken = false
        done()
      }
    })
  }
}
