import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { idFloorAt, newId } from '../../src/platform/ids.js'

describe('idFloorAt', () => {
  it('sorts above every id made before the instant and not above any made at or after it', () => {
    const instants = fc.integer({ min: 1, max: 2 ** 47 }).map((ms) => new Date(ms))
    fc.assert(
      fc.property(instants, (at) => {
        const floor = idFloorAt(at)
        expect(newId(new Date(at.getTime() - 1)) < floor).toBe(true)
        expect(newId(at) >= floor).toBe(true)
        expect(newId(new Date(at.getTime() + 1)) > floor).toBe(true)
      }),
    )
  })
})
