import { randomBytes, randomUUID } from 'node:crypto'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { HttpsReceiver } from '../../../../test/support/https-receiver.js'
import { ResponseChecker } from '../../../../test/support/openapi-contract.js'
import { createWebhook, secretOf, startWebhookServer, verifySignature, waitForLogs } from '../../../../test/support/webhook-fixtures.js'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const LINKS = ['https://shop.example.com/spring?utm_source=sms&utm_campaign=launch', 'https://example.org/terms#returns']
const MESSAGE = `Spring sale! ${LINKS[0]} Terms: ${LINKS[1]}`

let server: TestServer
let receiver: HttpsReceiver
let checker: ResponseChecker

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  // Trusts the receiver's test CA, so LinkClicked deliveries really reach it.
  server = await startWebhookServer()
  checker = new ResponseChecker(server.url)
})
afterAll(async () => {
  await server?.close()
  await receiver?.close()
})

interface Recipient {
  phoneNumber: string
  /** The 14-character link code; link i is /l/<code><i>. */
  code: string
}

interface Campaign {
  account: TestAccount
  key: string
  broadcastId: string
  messageId: string
  recipients: Recipient[]
}

let numbers = 0
/** Distinct valid numbers for the whole file. */
function phoneNumbers(count: number): string[] {
  return Array.from({ length: count }, () => `+1415555${String(1000 + numbers++).padStart(4, '0')}`)
}

/**
 * A completed broadcast with tracked links, as the start and the queue will leave it:
 * the account, its contacts, the list and the draft are made through the API; the
 * message, its recipients with their link codes and the broadcast's links are written
 * to the store, since queueing recipients with link codes is not in this area.
 */
async function campaign(count: number, options: { trackedLinks?: string[] | null; message?: string } = {}): Promise<Campaign> {
  const account = await signUp(server)
  const key = await createKey(server, account)
  const list = await server.post('/v1/contact-lists', { token: key, body: { name: 'Spring' } })
  expect(list.status).toBe(201)
  const phones = phoneNumbers(count)
  const contacts = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: phones.join(','), contactListId: list.body } })
  expect(contacts.status).toBe(201)
  const created = await server.post('/v1/broadcasts', { token: key, body: { name: 'Spring sale', message: options.message ?? MESSAGE, senderId: 'Acme', contactListId: list.body } })
  expect(created.status).toBe(201)
  const broadcastId = created.body as string
  const recipients = phones.map((phoneNumber) => ({ phoneNumber, code: randomBytes(7).toString('hex') }))
  const messageId = await writeStartedBroadcast(account.accountId, broadcastId, recipients, options.trackedLinks === undefined ? LINKS : options.trackedLinks)
  return { account, key, broadcastId, messageId, recipients }
}

async function writeStartedBroadcast(accountId: string, broadcastId: string, recipients: Recipient[], links: string[] | null): Promise<string> {
  const db = server.app.platform.store.db
  const messageId = randomUUID()
  const at = new Date().toISOString()
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('messages')
      .values({
        id: messageId,
        account_id: accountId,
        kind: 'broadcast',
        broadcast_id: broadcastId,
        content: MESSAGE,
        sender_id: 'Acme',
        encoding: 'GSM-7',
        segments: 1,
        sandbox: 0,
        recipients: recipients.length,
        credits_used: recipients.length,
        sent_count: recipients.length,
        delivered_count: recipients.length,
        created_at: at,
      })
      .execute()
    await trx
      .insertInto('message_recipients')
      .values(
        recipients.map((r) => ({
          message_id: messageId,
          account_id: accountId,
          phone_number: r.phoneNumber,
          status: 'delivered' as const,
          due_at: at,
          sent_at: at,
          delivered_at: at,
          parts_delivered: 1,
          carrier: 'default',
          lane: 1,
          link_code: r.code,
        })),
      )
      .execute()
    await trx
      .updateTable('broadcasts')
      .set({
        status: 'completed',
        message_id: messageId,
        track_links: 1,
        links: links === null ? null : JSON.stringify(links),
        queue_total: recipients.length,
        queued: recipients.length,
        sent_at: at,
        completed_at: at,
      })
      .where('id', '=', broadcastId)
      .execute()
  })
  return messageId
}

interface Followed {
  status: number
  headers: Headers
  text: string
  body: any
}

/** GET /l/{code} without following the redirect, checked against the OpenAPI document as ApiClient checks its requests. */
async function follow(code: string, on: TestServer = server, method = 'GET'): Promise<Followed> {
  const path = `/l/${code}`
  const response = await fetch(on.url + path, { method, redirect: 'manual' })
  const text = await response.text()
  await checker.check({ method, path, status: response.status, headers: response.headers, text })
  return { status: response.status, headers: response.headers, text, body: text === '' ? undefined : JSON.parse(text) }
}

/** The broadcast's counters, from its row; and, since GET /v1/broadcasts/{id} shows them, from there too. */
async function countersOf(c: Campaign): Promise<{ clicks: number; uniqueClicks: number }> {
  const row = await server.app.platform.store.db
    .selectFrom('broadcasts')
    .select(['clicks', 'unique_clicks'])
    .where('id', '=', c.broadcastId)
    .executeTakeFirstOrThrow()
  const counters = { clicks: Number(row.clicks), uniqueClicks: Number(row.unique_clicks) }
  const shown = await server.get(`/v1/broadcasts/${c.broadcastId}`, { token: c.key })
  expect(shown.status).toBe(200)
  expect({ clicks: shown.body.clicks, uniqueClicks: shown.body.uniqueClicks }).toEqual(counters)
  return counters
}

/** Waits until the recorder has written at least `clicks` clicks, then answers the counters. */
async function countedClicks(c: Campaign, clicks: number): Promise<{ clicks: number; uniqueClicks: number }> {
  await expect.poll(async () => (await countersOf(c)).clicks, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(clicks)
  return countersOf(c)
}

async function clickedAtOf(c: Campaign): Promise<Map<string, string | null>> {
  const message = await server.get(`/v1/sms/${c.messageId}`, { token: c.key })
  expect(message.status).toBe(200)
  return new Map(message.body.recipients.map((r: { phoneNumber: string; clickedAt: string | null }) => [r.phoneNumber, r.clickedAt]))
}

/** Runs every request at once; answers the 99th percentile of their times in ms. */
async function p99Of(requests: (() => Promise<void>)[]): Promise<number> {
  const times = await Promise.all(
    requests.map(async (send) => {
      const started = performance.now()
      await send()
      return performance.now() - started
    }),
  )
  return times.sort((a, b) => a - b)[Math.ceil(times.length * 0.99) - 1]!
}

/** `code` as sent in the path (percent-encoded where it must be). */
function expectNotFound(response: Followed, code: string): void {
  expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `link ${decodeURIComponent(code)} does not exist`, instance: `/l/${code}` })
}

describe('GET /l/{code}', () => {
  it('redirects each link of a recipient to its original URL with 302 and no body, and counts both clicks', async () => {
    const c = await campaign(2)
    const [first] = c.recipients
    const zero = await follow(`${first!.code}0`)
    expect(zero.status).toBe(302)
    expect(zero.headers.get('location')).toBe(LINKS[0])
    expect(zero.headers.get('cache-control')).toBe('no-store')
    expect(zero.text).toBe('')
    const one = await follow(`${first!.code}1`)
    expect(one.status).toBe(302)
    expect(one.headers.get('location')).toBe(LINKS[1])
    expect(await countedClicks(c, 2)).toEqual({ clicks: 2, uniqueClicks: 1 })
  })

  it('answers 404 problem+json for codes that name no link, and counts none of them', async () => {
    const c = await campaign(1)
    const code = c.recipients[0]!.code
    const other = await campaign(1, { trackedLinks: null })
    const misses = [
      // Well formed, but no recipient holds it.
      `${randomBytes(7).toString('hex')}0`,
      // The link code alone, and one character too many.
      code,
      `${code}00`,
      `${code.slice(0, 13)}0`,
      // Not lowercase hex.
      `${code.slice(0, 13)}g0`,
      `${code.toUpperCase()}0`,
      `${code.slice(0, 13)}-0`,
      // Past the broadcast's two links, or no index at all.
      `${code}2`,
      `${code}9`,
      `${code}x`,
      // A recipient of another broadcast, whose links are not (yet) written.
      `${other.recipients[0]!.code}0`,
      // Odd input in the path: not ASCII, a trailing space, very long.
      encodeURIComponent('é'.repeat(15)),
      encodeURIComponent(`${code}0 `),
      'x'.repeat(5000),
    ]
    for (const miss of misses) expectNotFound(await follow(miss), miss)
    // Nothing counted: a real click now is the first and only one.
    expect((await follow(`${code}0`)).status).toBe(302)
    expect(await countedClicks(c, 1)).toEqual({ clicks: 1, uniqueClicks: 1 })
    expect(await countersOf(other)).toEqual({ clicks: 0, uniqueClicks: 0 })
  })

  it('answers 404 for the links of a deleted broadcast', async () => {
    const c = await campaign(1)
    expect((await server.delete(`/v1/broadcasts/${c.broadcastId}`, { token: c.key })).status).toBe(204)
    const code = `${c.recipients[0]!.code}0`
    expectNotFound(await follow(code), code)
  })

  it('redirects 200 concurrent clicks of 50 recipients over kept-alive connections, then counts every click once and each recipient once, at its first click', async () => {
    const c = await campaign(50)
    const agent = new Agent({ connections: 50, keepAliveTimeout: 10_000 })
    try {
      // Warm, with HEADs, which count no click: the 50 connections are open, and the
      // broadcast's links read once and kept.
      const heads = await Promise.all(c.recipients.flatMap((r) => [r, r]).map((r) => request(`${server.url}/l/${r.code}0`, { method: 'HEAD', dispatcher: agent })))
      expect(heads.map((head) => head.statusCode)).toEqual(Array(100).fill(302))
      await Promise.all(heads.map((head) => head.body.dump()))
      // What 200 concurrent requests cost on this machine now, on a route that does nothing:
      // measured before the clicks and again after them, as a shared machine's load moves
      // between the two.
      const healthzP99 = () =>
        p99Of(Array.from({ length: 200 }, () => async () => {
          const response = await request(`${server.url}/healthz`, { dispatcher: agent })
          await response.body.dump()
        }))
      const baselineBefore = await healthzP99()
      const firstAnswer = new Map<string, number>()
      const answers: { status: number; location: unknown; link: number }[] = []
      const sentAt = Date.now()
      const clicks = c.recipients.flatMap((r) => [0, 1, 0, 1].map((link) => ({ r, link })))
      const p99 = await p99Of(
        clicks.map(({ r, link }) => async () => {
          const response = await request(`${server.url}/l/${r.code}${link}`, { dispatcher: agent })
          await response.body.dump()
          firstAnswer.set(r.phoneNumber, Math.min(firstAnswer.get(r.phoneNumber) ?? Infinity, Date.now()))
          answers.push({ status: response.statusCode, location: response.headers.location, link })
        }),
      )
      expect(answers.filter((a) => a.status !== 302 || a.location !== LINKS[a.link])).toEqual([])
      const baseline = Math.max(baselineBefore, await healthzP99())
      // Answered without waiting for any write: within 200 ms, or, on a machine too busy
      // for even that, within four times what a route that touches nothing takes (a redirect
      // reads the store once; on PostgreSQL 200 reads at once queue for the pool).
      expect(p99, `p99 of 200 concurrent redirects (200 concurrent GET /healthz: ${baseline.toFixed(0)} ms)`).toBeLessThan(Math.max(200, 4 * baseline))

      expect(await countedClicks(c, 200)).toEqual({ clicks: 200, uniqueClicks: 50 })
      const clickedAt = await clickedAtOf(c)
      for (const r of c.recipients) {
        const at = clickedAt.get(r.phoneNumber)!
        expect(at).toMatch(ISO)
        // The first click's time: taken before that click was answered.
        expect(Date.parse(at)).toBeGreaterThanOrEqual(sentAt)
        expect(Date.parse(at)).toBeLessThanOrEqual(firstAnswer.get(r.phoneNumber)!)
      }

      // Later clicks count, but are no recipient's first.
      await Promise.all(c.recipients.slice(0, 10).map((r) => request(`${server.url}/l/${r.code}1`, { dispatcher: agent }).then((res) => res.body.dump())))
      expect(await countedClicks(c, 210)).toEqual({ clicks: 210, uniqueClicks: 50 })
      expect(await clickedAtOf(c)).toEqual(clickedAt)
    } finally {
      await agent.close()
    }
  })

  it('counts exactly when two nodes record clicks of the same recipients at once', async () => {
    const c = await campaign(20)
    const second = await startServer({ database: server.config.database })
    try {
      const clicks = c.recipients.flatMap((r) => [server, second, server, second].map((node, link) => ({ node, code: `${r.code}${link % 2}` })))
      const answers = await Promise.all(clicks.map(({ node, code }) => fetch(`${node.url}/l/${code}`, { redirect: 'manual' }).then((res) => res.status)))
      expect(answers.every((status) => status === 302)).toBe(true)
      expect(await countedClicks(c, 80)).toEqual({ clicks: 80, uniqueClicks: 20 })
      for (const at of (await clickedAtOf(c)).values()) expect(at).toMatch(ISO)
    } finally {
      await second.close()
    }
  })

  it('writes the clicks it holds when the server closes', async () => {
    const c = await campaign(3)
    const second = await startServer({ database: server.config.database })
    for (const r of c.recipients) expect((await follow(`${r.code}0`, second)).status).toBe(302)
    expect((await follow(`${c.recipients[0]!.code}1`, second)).status).toBe(302)
    await second.close()
    // Written by the close itself: no waiting.
    expect(await countersOf(c)).toEqual({ clicks: 4, uniqueClicks: 3 })
  })

  it('answers HEAD as GET but counts no click', async () => {
    const c = await campaign(1)
    const code = `${c.recipients[0]!.code}1`
    const head = await follow(code, server, 'HEAD')
    expect(head.status).toBe(302)
    expect(head.headers.get('location')).toBe(LINKS[1])
    expect((await follow(code)).status).toBe(302)
    expect(await countedClicks(c, 1)).toEqual({ clicks: 1, uniqueClicks: 1 })
  })

  it('takes no credentials and does not count towards a rate limit', async () => {
    const c = await campaign(1)
    const limited = await startServer({ database: server.config.database, config: { rateLimitPerSecond: 2 } })
    try {
      const statuses = await Promise.all(Array.from({ length: 10 }, () => fetch(`${limited.url}/l/${c.recipients[0]!.code}0`, { redirect: 'manual', headers: { authorization: 'Bearer garbage' } }).then((res) => res.status)))
      expect(statuses).toEqual(Array(10).fill(302))
    } finally {
      await limited.close()
    }
  })
})

describe('LinkClicked', () => {
  it('reaches a webhook subscribed to it, signed, for every click, with the documented payload', async () => {
    const c = await campaign(2)
    const webhookId = await createWebhook(server, c.key, receiver.url(`/clicks-${c.broadcastId}`), 'LinkClicked')
    const secret = await secretOf(server, c.key, webhookId)
    const [first, second] = c.recipients
    expect((await follow(`${first!.code}1`)).status).toBe(302)
    expect((await follow(`${first!.code}1`)).status).toBe(302)
    expect((await follow(`${second!.code}0`)).status).toBe(302)
    const requests = await receiver.waitFor(`/clicks-${c.broadcastId}`, 3)
    const payloads = requests.map((r) => verifySignature(secret, r) as Record<string, unknown>)
    for (const payload of payloads) expect(Object.keys(payload)).toEqual(['event', 'broadcastId', 'recipientPhone', 'url', 'at'])
    // Deliveries go out side by side and may arrive in any order: both sorted by recipient.
    const byRecipient = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.recipientPhone).localeCompare(String(b.recipientPhone))
    expect(payloads.sort(byRecipient)).toEqual(
      [
        { event: 'LinkClicked', broadcastId: c.broadcastId, recipientPhone: first!.phoneNumber, url: LINKS[1], at: expect.stringMatching(ISO) },
        { event: 'LinkClicked', broadcastId: c.broadcastId, recipientPhone: first!.phoneNumber, url: LINKS[1], at: expect.stringMatching(ISO) },
        { event: 'LinkClicked', broadcastId: c.broadcastId, recipientPhone: second!.phoneNumber, url: LINKS[0], at: expect.stringMatching(ISO) },
      ].sort(byRecipient),
    )
    const logs = await waitForLogs(server, c.key, webhookId, 3)
    expect(logs.map((entry) => [entry.eventType, entry.success])).toEqual(Array(3).fill(['LinkClicked', true]))
  })

  it('is listed among the event types a webhook takes', async () => {
    const c = await campaign(1)
    const created = await server.post('/v1/webhooks', { token: c.key, body: { endpoint: 'https://hooks.example.com/clicks', eventType: 'LinkClicked' } })
    expect(created.status).toBe(201)
    expect((await server.get(`/v1/webhooks/${created.body}`, { token: c.key })).body.eventType).toBe('LinkClicked')
  })

  it('is not written to the outbox when nothing reads it', async () => {
    const c = await campaign(1)
    expect((await follow(`${c.recipients[0]!.code}0`)).status).toBe(302)
    expect(await countedClicks(c, 1)).toEqual({ clicks: 1, uniqueClicks: 1 })
    const row = await server.app.platform.store.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', c.account.accountId)
      .where('type', '=', 'LinkClicked')
      .executeTakeFirstOrThrow()
    expect(Number(row.n)).toBe(0)
  })
})

describe('clickedAt on GET /v1/sms/{messageId}', () => {
  it('is null until the recipient first clicks, then the time of that click, unchanged by later ones', async () => {
    const c = await campaign(2)
    const [clicker, other] = c.recipients
    expect(await clickedAtOf(c)).toEqual(new Map([[clicker!.phoneNumber, null], [other!.phoneNumber, null]]))
    const before = Date.now()
    expect((await follow(`${clicker!.code}0`)).status).toBe(302)
    const after = Date.now()
    await countedClicks(c, 1)
    const clickedAt = (await clickedAtOf(c)).get(clicker!.phoneNumber)!
    expect(clickedAt).toMatch(ISO)
    expect(Date.parse(clickedAt)).toBeGreaterThanOrEqual(before)
    expect(Date.parse(clickedAt)).toBeLessThanOrEqual(after)
    expect((await follow(`${clicker!.code}1`)).status).toBe(302)
    expect(await countedClicks(c, 2)).toEqual({ clicks: 2, uniqueClicks: 1 })
    expect(await clickedAtOf(c)).toEqual(new Map([[clicker!.phoneNumber, clickedAt], [other!.phoneNumber, null]]))
  })

  it('is null on a message sent with POST /v1/sms/send', async () => {
    const account = await signUp(server)
    // A Playground key sends without credits.
    const key = await createKey(server, account, 'Playground')
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: phoneNumbers(1), content: `See ${LINKS[0]}`, senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    const response = await server.get(`/v1/sms/${sent.body.messageId}`, { token: key })
    expect(response.body.recipients).toEqual([expect.objectContaining({ clickedAt: null })])
  })
})
