import type { Logger } from 'pino'

interface CommonOptions {
  /** Time between runs: between their starts ('fixed-rate'), or from one's end to the next's start ('after-run'). */
  intervalMs: number
  logger: Pick<Logger, 'error'>
  /** Logged at error level, with the error, when a run fails; the loop goes on. */
  errorMessage: string
}

export type BackgroundLoopOptions<T> = CommonOptions &
  (
    | {
        /**
         * Like setInterval: a tick every intervalMs after start(), the first one intervalMs
         * in. A tick that finds the previous run still going is skipped.
         */
        pacing: 'fixed-rate'
      }
    | {
        /** Each run is scheduled once the previous one has ended. */
        pacing: 'after-run'
        /** Before the first run; intervalMs if not given. */
        firstDelayMs?: number
        /** Before the run after one that returned `result`; intervalMs if not given. A failed run is always followed by intervalMs. */
        nextDelayMs?: (result: T) => number
      }
  )

/**
 * A periodic background job: runs never overlap, its timers never keep the process
 * alive, a failed run is logged and the next one comes as usual, and stop() clears the
 * timer and waits for the run in progress. Start it once; start it again only once
 * stop() has resolved.
 */
export class BackgroundLoop<T = void> {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private started = false

  constructor(
    private readonly job: () => Promise<T>,
    private readonly options: BackgroundLoopOptions<T>,
  ) {}

  /** True between start() and stop(): a job that works in several steps may end early once it is false. */
  get active(): boolean {
    return this.started
  }

  start(): void {
    if (this.started) return
    this.started = true
    const options = this.options
    if (options.pacing === 'fixed-rate') {
      this.timer = setInterval(() => {
        if (!this.running) this.run()
      }, options.intervalMs)
      this.timer.unref()
    } else {
      this.schedule(options.firstDelayMs ?? options.intervalMs)
    }
  }

  /** No run starts after this is called; resolves once the run in progress, if any, has ended. */
  async stop(): Promise<void> {
    this.started = false
    // clearTimeout clears an interval as well.
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }

  /** Resolves once the run in progress, if any, has ended (it never rejects). */
  async idle(): Promise<void> {
    await this.running
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined
      // Only after a stop() not waited for and a new start(): the run still going schedules the next.
      if (!this.running) this.run()
    }, delayMs)
    this.timer.unref()
  }

  private run(): void {
    const options = this.options
    let nextDelayMs = options.intervalMs
    // A job that throws instead of rejecting fails the same way.
    this.running = new Promise<T>((resolve) => resolve(this.job()))
      .then((result) => {
        if (options.pacing === 'after-run' && options.nextDelayMs) nextDelayMs = options.nextDelayMs(result)
      })
      .catch((err: unknown) => options.logger.error({ err }, options.errorMessage))
      .finally(() => {
        this.running = undefined
        if (options.pacing === 'after-run' && this.started && this.timer === undefined) this.schedule(nextDelayMs)
      })
  }
}
