import { afterEach, describe, expect, it } from 'vitest'
import { BackgroundLoop, type BackgroundLoopOptions } from '../../src/platform/background-loop.js'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A logger that keeps what is logged at error level. */
function recordingLogger() {
  const errors: { err: unknown; message: string }[] = []
  const logger = { error: (obj: { err: unknown }, message: string) => errors.push({ err: obj.err, message }) } as unknown as BackgroundLoopOptions<unknown>['logger']
  return { logger, errors }
}

const loops: { stop(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(loops.splice(0).map((loop) => loop.stop()))
})

function loop<T>(job: () => Promise<T>, options: BackgroundLoopOptions<T>): BackgroundLoop<T> {
  const created = new BackgroundLoop(job, options)
  loops.push(created)
  return created
}

describe.each(['fixed-rate', 'after-run'] as const)('a %s background loop', (pacing) => {
  it('runs repeatedly, never two runs at once, and waits intervalMs before the first', async () => {
    const { logger } = recordingLogger()
    let runs = 0
    let inFlight = 0
    let most = 0
    const started = performance.now()
    let firstAt = 0
    const background = loop(
      async () => {
        if (runs === 0) firstAt = performance.now() - started
        runs++
        inFlight++
        most = Math.max(most, inFlight)
        // Longer than the interval: a fixed-rate tick meanwhile finds the run still going.
        await sleep(25)
        inFlight--
      },
      { pacing, intervalMs: 10, logger, errorMessage: 'failed' },
    )
    background.start()
    await expect.poll(() => runs, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(4)
    expect(most).toBe(1)
    expect(firstAt).toBeGreaterThanOrEqual(8)
  })

  it('logs a failed run with the given message and goes on', async () => {
    const { logger, errors } = recordingLogger()
    let runs = 0
    const background = loop(
      async () => {
        runs++
        if (runs === 1) throw new Error('first run fails')
      },
      { pacing, intervalMs: 10, logger, errorMessage: 'the job failed; retrying' },
    )
    background.start()
    await expect.poll(() => runs, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(3)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toBe('the job failed; retrying')
    expect((errors[0]!.err as Error).message).toBe('first run fails')
  })

  it('a job that throws before it returns a promise fails the same way', async () => {
    const { logger, errors } = recordingLogger()
    let runs = 0
    const background = loop(
      () => {
        runs++
        throw new Error('synchronous')
      },
      { pacing, intervalMs: 10, logger, errorMessage: 'failed' },
    )
    background.start()
    await expect.poll(() => runs, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(2)
    expect(errors.length).toBeGreaterThanOrEqual(1)
    expect((errors[0]!.err as Error).message).toBe('synchronous')
  })

  it('stop() waits for the run in progress, and no run starts after it', async () => {
    const { logger } = recordingLogger()
    let runs = 0
    let finished = 0
    let release: () => void = () => {}
    const background = loop(
      async () => {
        runs++
        await new Promise<void>((resolve) => (release = resolve))
        finished++
      },
      { pacing, intervalMs: 5, logger, errorMessage: 'failed' },
    )
    background.start()
    expect(background.active).toBe(true)
    await expect.poll(() => runs, { timeout: 5_000, interval: 2 }).toBe(1)
    let stopped = false
    const stopping = background.stop().then(() => (stopped = true))
    expect(background.active).toBe(false)
    await sleep(30)
    expect(stopped).toBe(false)
    release()
    await stopping
    expect(finished).toBe(1)
    await sleep(40)
    expect(runs).toBe(1)
  })

  it('stop() before the first run means no run at all', async () => {
    const { logger } = recordingLogger()
    let runs = 0
    const background = loop(async () => void runs++, { pacing, intervalMs: 10, logger, errorMessage: 'failed' })
    background.start()
    await background.stop()
    await sleep(40)
    expect(runs).toBe(0)
  })
})

describe('an after-run background loop', () => {
  it('waits firstDelayMs before the first run, then intervalMs after each run ends', async () => {
    const { logger } = recordingLogger()
    const startedAt: number[] = []
    const endedAt: number[] = []
    const background = loop(
      async () => {
        startedAt.push(performance.now())
        await sleep(30)
        endedAt.push(performance.now())
      },
      // An interval long enough that a busy machine's stalls (hundreds of milliseconds in CI)
      // cannot make an immediate first run look like one that waited the interval.
      { pacing: 'after-run', firstDelayMs: 0, intervalMs: 1_500, logger, errorMessage: 'failed' },
    )
    const began = performance.now()
    background.start()
    await expect.poll(() => startedAt.length, { timeout: 10_000, interval: 5 }).toBeGreaterThanOrEqual(2)
    // Well under the interval: the first run came at once.
    expect(startedAt[0]! - began).toBeLessThan(750)
    for (let i = 1; i < startedAt.length; i++) expect(startedAt[i]! - endedAt[i - 1]!).toBeGreaterThanOrEqual(1_490)
  })

  it('takes the delay before the next run from the result, and intervalMs after a failure', async () => {
    const { logger, errors } = recordingLogger()
    // Runs 1 and 2 ask for the next at once, run 3 fails, run 4 comes after the interval.
    const startedAt: number[] = []
    const background = loop(
      async () => {
        startedAt.push(performance.now())
        if (startedAt.length === 3) throw new Error('third run fails')
        return startedAt.length < 3 ? 'more' : 'done'
      },
      { pacing: 'after-run', firstDelayMs: 0, intervalMs: 2_000, nextDelayMs: (result) => (result === 'more' ? 0 : 2_000), logger, errorMessage: 'failed' },
    )
    background.start()
    await expect.poll(() => startedAt.length, { timeout: 10_000, interval: 5 }).toBe(4)
    // Half the interval: room for a busy machine's stalls, still far from a wait of intervalMs.
    expect(startedAt[2]! - startedAt[0]!).toBeLessThan(1_000)
    expect(startedAt[3]! - startedAt[2]!).toBeGreaterThanOrEqual(1_990)
    expect(errors).toHaveLength(1)
  })

  it('idle() resolves once the run in progress has ended, and at once when none is', async () => {
    const { logger } = recordingLogger()
    let release: () => void = () => {}
    let running = false
    const background = loop(
      async () => {
        running = true
        await new Promise<void>((resolve) => (release = resolve))
        running = false
      },
      { pacing: 'after-run', firstDelayMs: 0, intervalMs: 1_000, logger, errorMessage: 'failed' },
    )
    await background.idle()
    background.start()
    await expect.poll(() => running, { timeout: 5_000, interval: 2 }).toBe(true)
    let idle = false
    const waiting = background.idle().then(() => (idle = true))
    await sleep(20)
    expect(idle).toBe(false)
    release()
    await waiting
    expect(running).toBe(false)
  })
})
