import { describe, expect, it } from 'vitest'
import { Semaphore } from './semaphore.js'

describe('Semaphore', () => {
  it('grants up to its size at once, then in the order asked, those asking first ahead of the rest', async () => {
    const slots = new Semaphore(2)
    expect(await slots.acquire()).toBe(true)
    expect(slots.tryAcquire()).toBe(true)
    expect(slots.tryAcquire()).toBe(false)
    expect(slots.held).toBe(2)

    const granted: string[] = []
    const wait = (name: string, first = false) => slots.acquire(first).then(() => granted.push(name))
    const all = Promise.all([wait('a'), wait('b'), wait('first', true), wait('c')])
    expect(slots.queued).toBe(4)

    for (let i = 0; i < 4; i++) {
      slots.release()
      await Promise.resolve()
    }
    await all
    expect(granted).toEqual(['first', 'a', 'b', 'c'])
    expect(slots.held).toBe(2)
    expect(slots.queued).toBe(0)
    slots.release()
    slots.release()
    expect(slots.held).toBe(0)
  })

  it('answers false to a wait whose signal aborts, and gives its turn to the next', async () => {
    const slots = new Semaphore(1)
    expect(await slots.acquire()).toBe(true)
    const controller = new AbortController()
    const abandoned = slots.acquire(false, controller.signal)
    const next = slots.acquire()
    controller.abort()
    expect(await abandoned).toBe(false)
    expect(slots.queued).toBe(1)
    slots.release()
    expect(await next).toBe(true)
    expect(slots.held).toBe(1)
    expect(await slots.acquire(false, AbortSignal.abort())).toBe(false)
  })
})
