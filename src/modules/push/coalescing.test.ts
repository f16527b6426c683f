import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import type { BusyShares } from '../../../test/support/busy-probe-thread.js'
import { startWorker } from '../../platform/workers.js'
import { COALESCE_FROM_BUSY_SHARE, COALESCE_UNTIL_BUSY_SHARE, WriteCoalescing } from './coalescing.js'

describe('eventLoopBusyProbe', () => {
  it("reads the event loop's utilization since the last call: near 1 while it computes, near 0 while it waits", async () => {
    // On a thread of its own: the test worker's loop also runs whatever earlier files in
    // the same worker left behind (once it read a whole 300 ms wait as busy), which is
    // that loop's business, not the probe's.
    const thread = startWorker(new URL('../../../test/support/busy-probe-thread.ts', import.meta.url).href, 'busy-probe-thread', null)
    const [shares] = (await once(thread, 'message')) as [BusyShares]
    await thread.terminate()
    // Time the loop spends blocked counts as busy however the machine shares its cores,
    // and time it spends waiting on a timer as idle: both hold on a loaded machine.
    expect(shares.computing).toBeGreaterThan(COALESCE_FROM_BUSY_SHARE)
    expect(shares.waiting).toBeLessThan(COALESCE_UNTIL_BUSY_SHARE)
  })
})

describe('WriteCoalescing', () => {
  it('auto: starts at the busy threshold, stops only well below it, and says when the decision changed', () => {
    let share = 0
    const coalescing = new WriteCoalescing('auto', () => share)
    expect(coalescing.isOn).toBe(false)
    share = COALESCE_FROM_BUSY_SHARE
    expect(coalescing.sample()).toBe(true)
    expect(coalescing.isOn).toBe(true)
    share = (COALESCE_FROM_BUSY_SHARE + COALESCE_UNTIL_BUSY_SHARE) / 2
    expect(coalescing.sample()).toBe(false)
    expect(coalescing.isOn).toBe(true)
    share = COALESCE_UNTIL_BUSY_SHARE
    expect(coalescing.sample()).toBe(true)
    expect(coalescing.isOn).toBe(false)
    share = (COALESCE_FROM_BUSY_SHARE + COALESCE_UNTIL_BUSY_SHARE) / 2
    expect(coalescing.sample()).toBe(false)
    expect(coalescing.isOn).toBe(false)
  })

  it('always and never ignore the load', () => {
    for (const [mode, on] of [['always', true], ['never', false]] as const) {
      const coalescing = new WriteCoalescing(mode, () => 1)
      expect(coalescing.isOn).toBe(on)
      expect(coalescing.sample()).toBe(false)
      expect(coalescing.isOn).toBe(on)
    }
  })
})
