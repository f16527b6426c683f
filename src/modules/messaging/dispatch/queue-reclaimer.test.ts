import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql, type Kysely } from 'kysely'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../../platform/db/connect.js'
import { QueueReclaimer } from './queue-reclaimer.js'

// The reclaim statement here records each run in a table of its own, so the test counts
// the runs the reclaimer started; what it reclaims on PostgreSQL is the dialect's concern.
let store: Store | undefined

afterEach(async () => {
  await store?.close()
  store = undefined
})

async function reclaimerCountingRuns() {
  store = openStore({ kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'mp-reclaim-')), 'test.db') })
  const db = store.db as unknown as Kysely<any>
  await sql`create table reclaims (id integer primary key)`.execute(db)
  const reclaimer = new QueueReclaimer(sql`insert into reclaims default values`, store.db, pino({ level: 'silent' }))
  const runs = async () => {
    await reclaimer.settled()
    return Number((await sql<{ n: number }>`select count(*) as n from reclaims`.execute(db)).rows[0]!.n)
  }
  /** Counts `total` hand-offs in claims of `claim`, letting each reclaim finish before the next claim. */
  const handOff = async (total: number, claim = 1000) => {
    for (let done = 0; done < total; done += claim) {
      reclaimer.countTowardsReclaim(claim)
      await reclaimer.settled()
    }
  }
  return { reclaimer, runs, handOff }
}

describe('QueueReclaimer', () => {
  it('reclaims during a run after 5,000 hand-offs, then after twice as many each time', async () => {
    const { runs, handOff } = await reclaimerCountingRuns()
    await handOff(4_000)
    expect(await runs()).toBe(0)
    await handOff(1_000)
    expect(await runs()).toBe(1)
    await handOff(9_000)
    expect(await runs()).toBe(1)
    await handOff(1_000)
    expect(await runs()).toBe(2)
    await handOff(19_000)
    expect(await runs()).toBe(2)
    await handOff(1_000)
    expect(await runs()).toBe(3)
  })

  it('reclaims at most every 200,000 hand-offs however long the run', async () => {
    const { runs, handOff } = await reclaimerCountingRuns()
    // 5k, 10k, 20k, 40k, 80k, 160k, then 200k each: seven runs by 515,000 hand-offs, and 8 at 715,000.
    await handOff(515_000, 5_000)
    expect(await runs()).toBe(7)
    await handOff(195_000, 5_000)
    expect(await runs()).toBe(7)
    await handOff(5_000, 5_000)
    expect(await runs()).toBe(8)
  })

  it('reclaims once the queue drains after 10,000 hand-offs, and starts the doubling over', async () => {
    const { reclaimer, runs, handOff } = await reclaimerCountingRuns()
    await handOff(5_000)
    expect(await runs()).toBe(1)
    // Past the first reclaim the run's next is at 10,000: a drain after 3,000 does nothing.
    await handOff(3_000)
    reclaimer.countTowardsReclaim(0)
    expect(await runs()).toBe(1)
    await handOff(7_000)
    expect(await runs()).toBe(2)
    // 10,000 more, then the queue drains: reclaimed at the drain, and the next run's first is 5,000 again.
    await handOff(9_000)
    reclaimer.countTowardsReclaim(0)
    expect(await runs()).toBe(2)
    await handOff(1_000)
    reclaimer.countTowardsReclaim(0)
    expect(await runs()).toBe(3)
    await handOff(5_000)
    expect(await runs()).toBe(4)
  })
})
