import { describe, expect, it } from 'vitest'
import { COALESCE_FROM_BUSY_SHARE, COALESCE_UNTIL_BUSY_SHARE, eventLoopBusyProbe, WriteCoalescing } from './coalescing.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('eventLoopBusyProbe', () => {
  it("reads the event loop's utilization since the last call: near 1 while it computes, near 0 while it waits", async () => {
    const probe = eventLoopBusyProbe()
    // Time the loop spends blocked counts as busy however the machine shares its cores,
    // and time it spends waiting on a timer as idle: both hold on a loaded machine.
    const until = performance.now() + 300
    while (performance.now() < until);
    expect(probe()).toBeGreaterThan(COALESCE_FROM_BUSY_SHARE)
    await sleep(300)
    expect(probe()).toBeLessThan(COALESCE_UNTIL_BUSY_SHARE)
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
