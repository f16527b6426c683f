/**
 * A node frozen mid-hand-off (SIGSTOP: what a starved machine, a long GC pause or a
 * suspended VM does to a process) for longer than its leases, then woken. Meanwhile the
 * other node took over the SMPP bind and reclaimed the frozen node's recipients. Woken,
 * the frozen node must not go on handing over the rest of the batch it had claimed: only
 * the parts already in flight when it froze (a window at most) can reach the SMSC twice.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { contactsCsv } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { TestSmsc, type SubmitStats } from '../../../../test/support/smsc/control.js'
import { duplicates, unrecordedBySession } from '../../../../test/support/smsc/repeats.js'
import { testStoreKind } from '../../../../test/support/store.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }
const RECIPIENTS = 3_000
const PARTS = 2
const WINDOW = 10
/** Long enough that renewals on a loaded machine keep up: only the freezes take claims away. */
const LEASE_TTL_MS = 3_000
/** Three leases: the bind slot and the claims run out, and the other node takes both over. */
const FROZEN_MS = 3 * LEASE_TTL_MS
/** Each answer waits this long, so the broadcast is still being handed over at each freeze. */
const SUBMIT_LATENCY_MS = 20
/** 200 GSM-7 characters: two parts of at most 153. */
const CONTENT = 'Spring sale: everything in store is 20 percent off until Sunday, and members get free delivery on orders above 30 euros. '.repeat(2).slice(0, 200)

const children: ChildServer[] = []
let smsc: TestSmsc | undefined
afterEach(async () => {
  for (const child of children) if (child.running) child.process.kill('SIGCONT')
  await Promise.all(children.splice(0).map((child) => child.kill()))
  await smsc?.stop()
})

// Only PostgreSQL runs several nodes on one store: an embedded store has no other node to take over.
describe.skipIf(testStoreKind !== 'postgres')('a node frozen past its leases while it hands a broadcast to an SMSC', () => {
  it('stops handing over, once woken, what the other node took over meanwhile: at most a window repeats per freeze', async () => {
    smsc = await TestSmsc.start(CREDENTIALS)
    await smsc.setSubmitLatency(SUBMIT_LATENCY_MS)
    const { url } = await childDatabase()
    const nodes: ChildServer[] = []
    // One after the other: the first applies the migrations.
    for (let i = 0; i < 2; i++) {
      const node = await ChildServer.start(url, {
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        CARRIER: 'smpp',
        SMPP_URL: smsc.url(),
        SMPP_WINDOW: String(WINDOW),
        SMPP_MAX_PER_SECOND: '5000',
        LEASE_TTL_MS: String(LEASE_TTL_MS),
      })
      children.push(node)
      nodes.push(node)
    }
    const api = nodes[0]!
    const owner = await signUp(api)
    const key = await createKey(api, owner)
    await topUp(api, owner.accountId, RECIPIENTS * PARTS)
    const list = (await api.post('/v1/contact-lists', { token: key, body: { name: 'everyone' } })).body as string
    const imported = await api.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(RECIPIENTS), contentType: 'text/csv' })
    await expect.poll(async () => (await api.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 30_000, interval: 100 }).toBe('completed')
    const broadcast = (await api.post('/v1/broadcasts', { token: key, body: { name: 'stall', message: CONTENT, senderId: 'Acme', contactListId: list } })).body as string
    expect((await api.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)

    // Each node is frozen once: one of them holds the bind (one per account) when frozen.
    const atFreezes: SubmitStats[] = []
    for (const node of nodes) {
      const target = (await smsc.submitStats()).accepted + 200
      await expect.poll(async () => (await smsc!.submitStats()).accepted, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(target)
      node.process.kill('SIGSTOP')
      atFreezes.push(await smsc.submitStats())
      await sleep(FROZEN_MS)
      node.process.kill('SIGCONT')
    }
    // Precondition: the broadcast was still being handed over at the last freeze.
    expect(atFreezes.at(-1)!.distinctParts).toBeLessThan(RECIPIENTS * PARTS)

    let progress: any
    await expect
      .poll(async () => (progress = (await api.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).sent, { timeout: 120_000, interval: 200 })
      .toBe(RECIPIENTS)
    const stats = await smsc.submitStats()
    const repeats = duplicates(stats)
    const bySession = unrecordedBySession(stats)
    console.log(
      `smpp-stall: frozen at ${atFreezes.map((s) => s.accepted).join(', ')} accepted parts; ${stats.accepted} accepted for ${RECIPIENTS * PARTS} parts, ` +
        `${repeats} duplicates (bound ${WINDOW * 2}); repeats by session ${JSON.stringify(Object.fromEntries(bySession))}`,
    )

    expect.soft(stats.distinctParts, 'parts the SMSC accepted at least once').toBe(RECIPIENTS * PARTS)
    // A frozen connection repeats only what it had in flight: a window per freeze, and per
    // connection. Woken, it hands over nothing the other node took over.
    expect.soft(repeats, `${repeats} duplicate parts after 2 freezes`).toBeLessThanOrEqual(WINDOW * 2)
    for (const [session, count] of bySession) expect.soft(count, `parts repeated from SMPP session ${session}`).toBeLessThanOrEqual(WINDOW)
    expect.soft(progress).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, creditsUsed: RECIPIENTS * PARTS })
    expect.soft((await api.get('/v1/account', { token: key })).body.balance).toBe(0)
  }, 300_000)
})
