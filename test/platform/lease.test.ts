import { setTimeout as sleep } from 'node:timers/promises'
import type { Kysely, Transaction } from 'kysely'
import { pino } from 'pino'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/platform/clock.js'
import type { DB } from '../../src/platform/db/schema.js'
import { Leases } from '../../src/platform/lease.js'
import { newId } from '../../src/platform/ids.js'
import { signUp } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { testStoreKind } from '../support/store.js'

const TTL = 1000
let server: TestServer
let db: Kysely<DB>
let accountId: string
// Far ahead of the wall clock, so the server's own sweeper never finds these rows expired.
let clock: ManualClock

beforeAll(async () => {
  server = await startServer()
  db = server.app.platform.store.db
  accountId = (await signUp(server)).accountId
})
afterAll(() => server.close())
beforeEach(async () => {
  clock = new ManualClock('2100-01-01T00:00:00.000Z')
  await db.deleteFrom('contact_imports').execute()
})

/** A node: its own lease manager over the shared store, recording what it reclaims. */
function node(name: string, reclaimForeignAtStart = false, ttlMs = TTL) {
  const reclaimed: string[] = []
  const leases = new Leases(db, server.app.platform.store.dialect, clock, pino({ level: 'silent' }), { nodeId: name, ttlMs, reclaimForeignAtStart })
  leases.manage({
    table: 'contact_imports',
    reclaim: async (trx: Transaction<DB>, ids: string[]) => {
      reclaimed.push(...ids)
      await trx.updateTable('contact_imports').set({ status: 'failed', ...Leases.released() }).where('id', 'in', ids).execute()
    },
  })
  return { leases, reclaimed }
}

async function insertWork(leases: Leases, count = 1): Promise<string[]> {
  const at = clock.now().toISOString()
  const ids = Array.from({ length: count }, () => newId())
  await db
    .insertInto('contact_imports')
    .values(ids.map((id) => ({ id, account_id: accountId, contact_list_id: null, status: 'processing' as const, failure: null, created_at: at, updated_at: at, completed_at: null, ...leases.claim() })))
    .execute()
  return ids
}

function leaseOf(id: string) {
  return db.selectFrom('contact_imports').select(['status', 'lease_owner', 'lease_expires_at']).where('id', '=', id).executeTakeFirstOrThrow()
}

describe('leases', () => {
  it('a claim its holder keeps renewing is never reclaimed, however long the work runs', async () => {
    const a = node('node-a')
    const b = node('node-b')
    const [id] = await insertWork(a.leases)
    a.leases.hold('contact_imports', id!)
    for (let i = 0; i < 10; i++) {
      clock.advance(TTL / 2)
      await a.leases.tick()
      await b.leases.tick()
    }
    expect(b.reclaimed).toEqual([])
    expect(await leaseOf(id!)).toMatchObject({ status: 'processing', lease_owner: 'node-a' })
  })

  it('a claim whose holder stopped renewing is reclaimed by another node once it expires, exactly once, and the holder learns it lost it', async () => {
    const a = node('node-a')
    const b = node('node-b')
    const c = node('node-c')
    const [id] = await insertWork(a.leases)
    let lost = 0
    a.leases.hold('contact_imports', id!, { onLost: () => lost++ })

    clock.advance(TTL - 1)
    await b.leases.tick()
    expect(b.reclaimed).toEqual([])

    clock.advance(2)
    await b.leases.tick()
    await c.leases.tick()
    expect(b.reclaimed).toEqual([id])
    expect(c.reclaimed).toEqual([])
    expect(await leaseOf(id!)).toEqual({ status: 'failed', lease_owner: null, lease_expires_at: null })

    // The old holder comes back: its renewals find the row no longer its own. The first may
    // be racing its own work's end (which releases the row in the store before release()).
    await a.leases.tick()
    expect(lost).toBe(0)
    await a.leases.tick()
    expect(lost).toBe(1)
    await a.leases.tick()
    expect(lost).toBe(1)
  })

  it('a holder counts its claim as held only while a tenth of it is left by its own clock, and again once a renewal lands', async () => {
    // Timed on the real clock: a lease long enough that a loaded machine's stalls (a
    // second at times in CI) stay within the margins below.
    const ttl = 6_000
    const a = node('node-a', false, ttl)
    const claimedAt = performance.now()
    const [id] = await insertWork(a.leases)
    a.leases.hold('contact_imports', id!, { claimedAt })
    expect(a.leases.stillHeld('contact_imports', id!)).toBe(true)
    // A renewal late by a third of the lease (due at a third, none yet at two thirds) stops nothing.
    await sleep((ttl * 2) / 3)
    expect(a.leases.stillHeld('contact_imports', id!)).toBe(true)
    // None for nine tenths: another node may reclaim the row a tenth later, so the holder
    // stops counting on it now.
    await sleep(ttl * 0.9 - (ttl * 2) / 3 + 50)
    expect(a.leases.stillHeld('contact_imports', id!)).toBe(false)
    await a.leases.tick()
    expect(a.leases.stillHeld('contact_imports', id!)).toBe(true)
    a.leases.release('contact_imports', id!)
    expect(a.leases.stillHeld('contact_imports', id!)).toBe(false)
  })

  it('work that ends between a renewal and its release() is not reported lost', async () => {
    const a = node('node-a')
    const [id] = await insertWork(a.leases)
    let lost = 0
    a.leases.hold('contact_imports', id!, { onLost: () => lost++ })
    // The work's own transaction releases the row in the store; its release() comes a moment later.
    await db.updateTable('contact_imports').set({ status: 'completed', ...Leases.released() }).where('id', '=', id!).execute()
    await a.leases.tick()
    a.leases.release('contact_imports', id!)
    await a.leases.tick()
    expect(lost).toBe(0)
  })

  it('a node does not reclaim its own held work even when a renewal came late', async () => {
    const a = node('node-a')
    const [id] = await insertWork(a.leases)
    a.leases.hold('contact_imports', id!)
    clock.advance(TTL * 5)
    await a.leases.tick()
    expect(a.reclaimed).toEqual([])
    expect((await leaseOf(id!)).lease_expires_at).toBe(new Date(clock.now().getTime() + TTL).toISOString())
  })

  // Row locks exist on PostgreSQL only: on SQLite a second writer waits for the first.
  it.runIf(testStoreKind === 'postgres')('a renewal passes over a row another transaction holds locked instead of waiting, and keeps it', async () => {
    const a = node('node-a')
    const [locked, free] = await insertWork(a.leases, 2)
    let lost = 0
    a.leases.hold('contact_imports', locked!, { onLost: () => lost++ })
    a.leases.hold('contact_imports', free!, { onLost: () => lost++ })
    clock.advance(TTL / 2)
    let unlock!: () => void
    let isLocked!: () => void
    const lockedNow = new Promise<void>((resolve) => (isLocked = resolve))
    const holder = db.transaction().execute(async (trx) => {
      await trx.selectFrom('contact_imports').select('id').where('id', '=', locked!).forUpdate().execute()
      isLocked()
      await new Promise<void>((resolve) => (unlock = resolve))
    })
    await lockedNow
    try {
      const waited = new Promise((_, reject) => setTimeout(() => reject(new Error('the renewal waited for the locked row')), 5000).unref())
      await Promise.race([a.leases.tick(), waited])
      expect((await leaseOf(free!)).lease_expires_at).toBe(new Date(clock.now().getTime() + TTL).toISOString())
      expect((await leaseOf(locked!)).lease_expires_at).toBe(new Date(clock.now().getTime() - TTL / 2 + TTL).toISOString())
      expect(lost).toBe(0)
    } finally {
      unlock()
      await holder
    }
    await a.leases.tick()
    expect((await leaseOf(locked!)).lease_expires_at).toBe(new Date(clock.now().getTime() + TTL).toISOString())
    expect(lost).toBe(0)
  })

  it('released work is no longer renewed, and is reclaimed once expired if nobody finished it', async () => {
    const a = node('node-a')
    const [id] = await insertWork(a.leases)
    a.leases.hold('contact_imports', id!)
    a.leases.release('contact_imports', id!)
    clock.advance(TTL + 1)
    await a.leases.tick()
    expect(a.reclaimed).toEqual([id])
  })

  it('embedded mode: work an earlier run held is reclaimed at start, at once, and its own is left alone', async () => {
    const earlier = node('earlier-run')
    const [old] = await insertWork(earlier.leases)
    const restarted = node('this-run', true)
    const [own] = await insertWork(restarted.leases)
    await restarted.leases.start()
    try {
      expect(restarted.reclaimed).toEqual([old])
      expect((await leaseOf(own!)).lease_owner).toBe('this-run')
    } finally {
      await restarted.leases.stop()
    }
  })

  it('reclaims many expired rows in batches, each exactly once, with nodes sweeping at the same time', async () => {
    const dead = node('dead-node')
    const ids = await insertWork(dead.leases, 250)
    clock.advance(TTL + 1)
    const sweepers = [node('sweeper-1'), node('sweeper-2'), node('sweeper-3')]
    await Promise.all(sweepers.map((s) => s.leases.tick()))
    const all = sweepers.flatMap((s) => s.reclaimed)
    expect(all.sort()).toEqual([...ids].sort())
    expect(new Set(all).size).toBe(250)
  })
})
