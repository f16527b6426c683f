import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { LoopStalls } from '../../src/platform/metrics/loop-stalls.js'

/** Holds the event loop, as a long synchronous task would. */
function holdLoop(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function counts(registry: Registry) {
  const value = async (name: string, work?: string) => {
    const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name)
    return (metric?.values ?? []).filter((v) => work === undefined || v.labels.work === work).reduce((sum, v) => sum + v.value, 0)
  }
  return {
    stalls: await value('event_loop_stalls_total'),
    slices: await value('background_slices_total', 'dispatch'),
    over20: await value('background_slices_over_20ms_total', 'dispatch'),
  }
}

let stalls: LoopStalls | undefined
afterEach(() => stalls?.stop())

describe('LoopStalls', () => {
  it('counts a run of the event loop over 20 ms, and the background slice under way during it', async () => {
    const registry = new Registry()
    stalls = new LoopStalls(registry, true)
    await sleep(50)
    // Short slices, with turns of the loop between their steps: none stalls.
    for (let i = 0; i < 5; i++) {
      await stalls.slice('dispatch', async () => {
        holdLoop(2)
        await sleep(1)
        holdLoop(2)
      })
    }
    await sleep(50)
    // None of them stalls (a busy machine may starve this process, and that counts too).
    const short = await counts(registry)
    expect(short.slices).toBe(5)
    expect(short.over20).toBeLessThanOrEqual(5 * short.stalls)

    // A slice with one step of 60 ms.
    await stalls.slice('dispatch', async () => {
      await sleep(1)
      holdLoop(60)
    })
    await sleep(50)
    const long = await counts(registry)
    expect(long.slices).toBe(6)
    expect(long.stalls).toBeGreaterThanOrEqual(short.stalls + 1)
    expect(long.over20).toBe(short.over20 + 1)
  })

  it('counts a slice that ended in the very run that stalled the loop', async () => {
    const registry = new Registry()
    stalls = new LoopStalls(registry, true)
    await sleep(50)
    // Its last step holds the loop, then it ends before the timer can tick.
    await stalls.slice('dispatch', async () => holdLoop(60))
    await sleep(50)
    const after = await counts(registry)
    expect(after.stalls).toBeGreaterThanOrEqual(1)
    expect({ slices: after.slices, over20: after.over20 }).toEqual({ slices: 1, over20: 1 })
  })

  it('counts a stall of other work against no slice', async () => {
    const registry = new Registry()
    stalls = new LoopStalls(registry, true)
    await stalls.slice('dispatch', async () => sleep(5))
    await sleep(50)
    const before = await counts(registry)
    holdLoop(60)
    await sleep(50)
    const after = await counts(registry)
    expect(after.stalls).toBeGreaterThanOrEqual(before.stalls + 1)
    expect({ slices: after.slices, over20: after.over20 }).toEqual({ slices: 1, over20: before.over20 })
  })
})
