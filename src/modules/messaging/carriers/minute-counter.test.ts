import { describe, expect, it } from 'vitest'
import { MinuteCounter } from './minute-counter.js'

describe('MinuteCounter', () => {
  it('counts what was added in the last 60 seconds, forgetting each second as it leaves', () => {
    let now = 1_000_000_000
    const counter = new MinuteCounter(() => now)
    counter.add()
    counter.add(2)
    now += 30_000
    counter.add(3)
    expect(counter.total).toBe(6)
    now += 31_000
    expect(counter.total).toBe(3)
    now += 120_000
    expect(counter.total).toBe(0)
    counter.add()
    expect(counter.total).toBe(1)
  })
})
