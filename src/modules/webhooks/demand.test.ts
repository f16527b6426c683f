import type { Compilable } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, startWebhookServer } from '../../../test/support/webhook-fixtures.js'
import { WebhookDemand } from './demand.js'

let server: TestServer
let receiver: HttpsReceiver
let alice: TestAccount
let bob: TestAccount

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer()
  alice = await signUp(server)
  bob = await signUp(server)
  await createWebhook(server, await createKey(server, alice), receiver.url('/delivered'), 'SmsDelivered')
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

/**
 * The store's long-read path with a gate in front: while `hold()` is in force every
 * lookup waits, as it does behind a long count or export on SQLite's reader thread.
 */
function gatedReads() {
  const { store } = server.app.platform
  let open: Promise<void> = Promise.resolve()
  let release = () => {}
  let reads = 0
  return {
    read: async <T,>(query: Compilable<T>): Promise<T[]> => {
      reads++
      await open
      return store.readLong(query)
    },
    hold() {
      open = new Promise((resolve) => (release = resolve))
    },
    release: () => release(),
    get reads() {
      return reads
    },
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('the webhooks demand', () => {
  it('answers from the store, and once known asks it again only in the background, never making a producer wait behind a long read', async () => {
    const reads = gatedReads()
    const demand = new WebhookDemand(server.app.platform.store.db, reads.read, { ttlMs: 2_000, coldWaitMs: 5_000 })
    expect(await demand.wants(alice.accountId, 'SmsDelivered')).toBe(true)
    expect(await demand.wants(alice.accountId, 'SmsSent')).toBe(false)
    expect(reads.reads).toBeGreaterThanOrEqual(1)

    // Past half the ttl, with the long-read path held (until released below, so waiting
    // for it would never end): the answer comes at once, and a lookup is under way.
    await sleep(1_050)
    reads.hold()
    const before = reads.reads
    const started = performance.now()
    expect(await demand.wants(alice.accountId, 'SmsDelivered')).toBe(true)
    expect(await demand.wants(alice.accountId, 'SmsSent')).toBe(false)
    expect(performance.now() - started).toBeLessThan(1_000)
    // One lookup at a time, however many ask meanwhile.
    const during = reads.reads
    expect(during - before).toBeLessThanOrEqual(1)
    expect(await demand.wants(alice.accountId, 'SmsDelivered')).toBe(true)
    expect(reads.reads).toBe(during)
    reads.release()
    expect(await demand.wants(alice.accountId, 'SmsDelivered')).toBe(true)
  })

  it('makes an account without a recent answer wait for its lookup, at most coldWaitMs, then writes its events', async () => {
    const reads = gatedReads()
    const demand = new WebhookDemand(server.app.platform.store.db, reads.read, { ttlMs: 1_000, coldWaitMs: 150 })
    // Known and unwanted once the store has answered (a slow first answer is "wanted" meanwhile).
    await expect.poll(() => demand.wants(bob.accountId, 'SmsDelivered')).toBe(false)

    reads.hold()
    demand.changed(bob.accountId)
    const started = performance.now()
    // No answer since the change, and none within coldWaitMs: wanted, so nothing is left out.
    expect(await demand.wants(bob.accountId, 'SmsDelivered')).toBe(true)
    expect(performance.now() - started).toBeGreaterThanOrEqual(140)
    reads.release()
    // Once the lookup is back, the account's own answer again.
    await expect.poll(() => demand.wants(bob.accountId, 'SmsDelivered')).toBe(false)
  })

  it('does not keep an answer read before a change on this node', async () => {
    const reads = gatedReads()
    const demand = new WebhookDemand(server.app.platform.store.db, reads.read, { ttlMs: 60_000, coldWaitMs: 5_000 })
    const carol = await signUp(server)
    reads.hold()
    const before = demand.wants(carol.accountId, 'SmsFailed')
    // The webhook is created while that lookup waits; its answer must not be kept.
    await createWebhook(server, await createKey(server, carol), receiver.url('/failed'), 'SmsFailed')
    demand.changed(carol.accountId)
    reads.release()
    await before
    expect(await demand.wants(carol.accountId, 'SmsFailed')).toBe(true)
  })
})
