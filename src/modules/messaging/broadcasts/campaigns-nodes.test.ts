/**
 * Pause, resume and cancel with two nodes on one PostgreSQL schema (two servers in this
 * process, each with its own node id, pool and dispatcher): a change taken by node A is
 * obeyed by node B, which reads the broadcasts' states at most every 500 ms.
 *
 * What each node handed over is its own counter, sms_parts_submitted_total on its own
 * GET /metrics (each app has its own registry); what the carrier holds is its books,
 * simulator_messages, shared in the store. A broadcast runs at 1,200 a minute (twenty
 * recipients a second, shared by both nodes through the broadcast's pace), so 300
 * recipients take fifteen seconds; its message is two parts long.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { testStoreKind } from '../../../../test/support/store.js'

/** 216 GSM-7 characters: two parts. */
const TWO_PARTS = 'Spring sale at Acme: everything 30% off until Sunday. '.repeat(4)
const PACE = 1_200
const RECIPIENTS = 300
const CREDITS = 1_000
/** "Effective within 1 s on every node": B reads states every 500 ms, and a batch that read just before finishes within moments. */
const EFFECTIVE_WITHIN_MS = 1_000
/** Watched after that to show nothing more goes: at the pace, some fifty recipients would. */
const WATCH_MS = 2_500

describe.skipIf(testStoreKind !== 'postgres')('two nodes on one PostgreSQL', () => {
  let nodeA: TestServer
  let nodeB: TestServer

  beforeAll(async () => {
    nodeA = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, metricsEnabled: true } })
    nodeB = await startServer({ database: nodeA.config.database, config: { adminToken: TEST_ADMIN_TOKEN, metricsEnabled: true } })
    expect(nodeB.config.nodeId).not.toBe(nodeA.config.nodeId)
  })
  afterAll(async () => {
    await nodeA?.close()
    await nodeB?.close()
  })

  /** Parts this node handed to the simulator and it accepted, from the node's own metrics. */
  async function partsHandedBy(node: TestServer): Promise<number> {
    const text = await (await fetch(`${node.url}/metrics`)).text()
    return text
      .split('\n')
      .filter((line) => line.startsWith('sms_parts_submitted_total{') && line.includes('carrier="simulator"') && line.includes('outcome="accepted"'))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)
  }

  /** The carrier's books for numbers beginning `prefix`, read from the shared store. */
  async function books(prefix: string): Promise<{ parts: number; numbers: number; maxSubmissions: number; lastAcceptedAt: string | null }> {
    const row = await nodeA.app.platform.store.db
      .selectFrom('simulator_messages')
      .select([
        sql<number>`count(*)`.as('parts'),
        sql<number>`count(distinct to_number)`.as('numbers'),
        sql<number | null>`max(submissions)`.as('max_submissions'),
        sql<string | null>`max(accepted_at)`.as('last_accepted_at'),
      ])
      .where('to_number', 'like', `${prefix}%`)
      .executeTakeFirstOrThrow()
    return { parts: Number(row.parts), numbers: Number(row.numbers), maxSubmissions: Number(row.max_submissions ?? 0), lastAcceptedAt: row.last_accepted_at }
  }

  /**
   * An account on node A with a two-part broadcast to 300 contacts of its own, started
   * through node B (whose dispatcher is woken first); numbers usNumber(k × 9000 + i) all
   * begin +1201, then the exchange 200 + k.
   */
  let campaigns = 0
  async function startCampaign(): Promise<{ key: string; id: string; prefix: string }> {
    const k = ++campaigns
    const account = await signUp(nodeA)
    const key = await createKey(nodeA, account)
    await topUp(nodeA, account.accountId, CREDITS)
    const listId = (await nodeA.post('/v1/contact-lists', { token: key, body: { name: 'Everyone' } })).body as string
    const numbers = Array.from({ length: RECIPIENTS }, (_, i) => usNumber(k * 9000 + i))
    expect((await nodeA.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(','), contactListId: listId } })).status).toBe(201)
    const id = (await nodeA.post('/v1/broadcasts', { token: key, body: { name: 'Spring sale', message: TWO_PARTS, senderId: 'Acme', contactListId: listId, maxPerMinute: PACE } })).body as string
    const sent = await nodeB.post(`/v1/broadcasts/${id}/send`, { token: key })
    expect(sent.status).toBe(202)
    expect(sent.body).toEqual({ status: 'sending', recipients: RECIPIENTS, creditsUsed: 2 * RECIPIENTS })
    return { key, id, prefix: `+1201${200 + k}` }
  }

  /** Waits until node B has handed over more than `than` parts. */
  async function bHandsOver(than: number): Promise<void> {
    await expect.poll(() => partsHandedBy(nodeB), { timeout: 20_000, interval: 50 }).toBeGreaterThan(than)
  }

  /**
   * After a change answered by node A at `answeredAt`: once WATCH_MS more have passed,
   * nothing in the books was accepted later than a second after it. The simulator's books
   * keep the time each part was handed over: a part handed over during the watch would be
   * later. A batch that was past its check
   * at the change may still be being recorded when the second is up (on a loaded machine
   * it was, with parts accepted in time), so the books are read at the end of the watch.
   */
  async function stoppedOnBothNodes(prefix: string, answeredAt: number) {
    await sleep(EFFECTIVE_WITHIN_MS + WATCH_MS)
    const settled = { books: await books(prefix), a: await partsHandedBy(nodeA), b: await partsHandedBy(nodeB) }
    expect(Date.parse(settled.books.lastAcceptedAt!)).toBeLessThanOrEqual(answeredAt + EFFECTIVE_WITHIN_MS)
    return settled
  }

  it('a pause taken by node A stops hand-off on node B within a second; resumed on A, B hands over again and every recipient goes once', async () => {
    const { key, id, prefix } = await startCampaign()
    await bHandsOver(20)

    const paused = await nodeA.post(`/v1/broadcasts/${id}/pause`, { token: key })
    const pausedAt = Date.now()
    expect(paused.status).toBe(200)
    expect(paused.body).toMatchObject({ status: 'paused', pausedAt: expect.any(String) })
    const stopped = await stoppedOnBothNodes(prefix, pausedAt)
    expect(stopped.books.numbers).toBeLessThan(RECIPIENTS)
    expect(stopped.books).toMatchObject({ parts: 2 * stopped.books.numbers, maxSubmissions: 1 })
    expect(await nodeB.get(`/v1/broadcasts/${id}`, { token: key })).toMatchObject({ body: { status: 'paused', sent: stopped.books.numbers, failed: 0 } })

    const resumed = await nodeA.post(`/v1/broadcasts/${id}/resume`, { token: key })
    expect(resumed.status).toBe(200)
    expect(resumed.body).toMatchObject({ status: 'sending', pausedAt: null })
    await bHandsOver(stopped.b)

    await expect.poll(async () => (await nodeB.get(`/v1/broadcasts/${id}`, { token: key })).body.status, { timeout: 60_000, interval: 100 }).toBe('completed')
    expect((await nodeB.get(`/v1/broadcasts/${id}`, { token: key })).body).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, failed: 0, creditsUsed: 2 * RECIPIENTS })
    expect(await books(prefix)).toMatchObject({ parts: 2 * RECIPIENTS, numbers: RECIPIENTS, maxSubmissions: 1 })
    expect((await nodeB.get('/v1/account', { token: key })).body.balance).toBe(CREDITS - 2 * RECIPIENTS)
  }, 120_000)

  it('a cancel taken by node A stops hand-off on node B within a second, and the account pays for exactly what was handed over', async () => {
    const { key, id, prefix } = await startCampaign()
    const before = await partsHandedBy(nodeB)
    await bHandsOver(before + 20)

    const cancelled = await nodeA.post(`/v1/broadcasts/${id}/cancel`, { token: key })
    const cancelledAt = Date.now()
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancelledAt: expect.any(String) })
    const stopped = await stoppedOnBothNodes(prefix, cancelledAt)
    const handed = stopped.books.numbers
    expect(handed).toBeLessThan(RECIPIENTS)
    expect(stopped.books).toMatchObject({ parts: 2 * handed, maxSubmissions: 1 })

    // A batch in flight on either node at the cancel fails and refunds its own recipients.
    await expect.poll(async () => { const b = (await nodeB.get(`/v1/broadcasts/${id}`, { token: key })).body; return b.sent + b.failed }, { timeout: 5_000, interval: 50 }).toBe(RECIPIENTS)
    for (const node of [nodeA, nodeB]) {
      expect((await node.get(`/v1/broadcasts/${id}`, { token: key })).body).toMatchObject({ status: 'cancelled', sent: handed, failed: RECIPIENTS - handed, creditsUsed: 2 * handed })
      expect((await node.get('/v1/account', { token: key })).body.balance).toBe(CREDITS - 2 * handed)
    }
    const page = await nodeB.get('/v1/sms?pageSize=10', { token: key })
    const messageId = page.body.items.find((m: any) => m.broadcastId === id).messageId
    const message = (await nodeB.get(`/v1/sms/${messageId}`, { token: key })).body
    expect(message.recipients.filter((r: any) => r.status === 'failed' && r.error === 'cancelled')).toHaveLength(RECIPIENTS - handed)
    expect(message.recipients.filter((r: any) => r.status === 'queued' || (r.status === 'failed' && r.error !== 'cancelled'))).toEqual([])
  }, 120_000)
})
