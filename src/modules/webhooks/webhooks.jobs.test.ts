import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, logsOf, startWebhookServer, waitForLogs } from '../../../test/support/webhook-fixtures.js'
import { openStore } from '../../platform/db/connect.js'
import { newId } from '../../platform/ids.js'

let server: TestServer
let receiver: HttpsReceiver

// A hung attempt fails after 3 s and is retried 200 ms later, twice. On a loaded machine
// (two cores, CI's other test files beside) an answered attempt took over a second, three
// times in a row: the timeout leaves room for that, the retries for worse.
const TIMEOUT_MS = 3_000
const SCHEDULE = [200, 200]

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer({ config: { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: TIMEOUT_MS, leaseTtlMs: 600 } })
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

/** An account of its own, so that only the test's webhooks take its events. */
async function account(on: TestServer = server): Promise<{ owner: TestAccount; key: string }> {
  const owner = await signUp(on)
  return { owner, key: await createKey(on, owner) }
}

/** A job as the fan-out writes it, for an event that occurred now; `held` makes it claimed by another node. */
async function writeJob(on: TestServer, accountId: string, webhookIds: string[], held?: { by: string; expired: boolean }) {
  const now = new Date()
  const job = {
    id: newId(),
    account_id: accountId,
    event_id: newId(),
    event_type: 'ContactCreated',
    payload: JSON.stringify({ event: 'ContactCreated', contactId: newId(), phoneNumber: '+14155550100', at: now.toISOString() }),
    webhook_ids: webhookIds.join(','),
    deliveries: webhookIds.length,
    created_at: now.toISOString(),
    claims: held ? 1 : 0,
    lease_owner: held?.by ?? null,
    lease_expires_at: held ? new Date(now.getTime() + (held.expired ? -1000 : 60_000)).toISOString() : null,
  }
  await on.app.platform.store.db.insertInto('webhook_jobs').values(job).execute()
  return job
}

const jobsOfEvent = (on: TestServer, eventId: string) => on.app.platform.store.db.selectFrom('webhook_jobs').selectAll().where('event_id', '=', eventId).execute()

const deliveriesOfEvent = (on: TestServer, eventId: string) =>
  on.app.platform.store.db.selectFrom('webhook_deliveries').select(['webhook_id', 'status', 'attempts']).where('event_id', '=', eventId).orderBy('webhook_id').execute()

describe('a job (an event and the webhooks it goes to)', () => {
  it('is deleted once each of its deliveries is recorded, leaving a delivery row per webhook', async () => {
    const { key } = await account()
    const ids = [await createWebhook(server, key, receiver.url('/job-one'), 'ContactCreated'), await createWebhook(server, key, receiver.url('/job-two'), 'ContactCreated')]
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550101' } })).status).toBe(201)
    const [request] = await receiver.waitFor('/job-one', 1)
    await receiver.waitFor('/job-two', 1)
    const eventId = String(request!.headers['webhook-id'])
    for (const id of ids) await waitForLogs(server, key, id, 1)
    await expect.poll(() => jobsOfEvent(server, eventId)).toEqual([])
    const rows = await deliveriesOfEvent(server, eventId)
    expect(rows.map((r) => [r.webhook_id, r.status, Number(r.attempts)])).toEqual(ids.sort().map((id) => [id, 'delivered', 1]))
  })

  it('claimed again after its holder died, goes only to the webhooks with no delivery yet', async () => {
    const { owner, key } = await account()
    const paths = ['/reclaimed-done', '/reclaimed-left-1', '/reclaimed-left-2']
    const ids = await Promise.all(paths.map((path) => createWebhook(server, key, receiver.url(path), 'ContactCreated')))
    const job = await writeJob(server, owner.accountId, ids, { by: 'a-node-that-died', expired: true })
    // The dead holder recorded the first webhook's delivery before it died.
    await server.app.platform.store.db
      .insertInto('webhook_deliveries')
      .values({ id: newId(), webhook_id: ids[0]!, account_id: owner.accountId, event_id: job.event_id, event_type: job.event_type, payload: job.payload, status: 'delivered', attempts: 1, scheduled_attempts: 1, next_attempt_at: null, last_attempt_at: job.created_at, created_at: job.created_at })
      .execute()

    for (const path of paths.slice(1)) {
      const [request] = await receiver.waitFor(path, 1)
      expect(request!.headers['webhook-id']).toBe(job.event_id)
      expect(JSON.parse(request!.body)).toEqual(JSON.parse(job.payload))
    }
    await expect.poll(() => jobsOfEvent(server, job.event_id)).toEqual([])
    expect(receiver.to(paths[0]!)).toHaveLength(0)
    for (const path of paths.slice(1)) expect(receiver.to(path)).toHaveLength(1)
    expect((await deliveriesOfEvent(server, job.event_id)).map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered'])
  })

  it('held by a live node is left alone', async () => {
    const { owner, key } = await account()
    const id = await createWebhook(server, key, receiver.url('/held-elsewhere'), 'ContactCreated')
    const job = await writeJob(server, owner.accountId, [id], { by: 'a-live-node', expired: false })
    // Several idle polls and lease sweeps pass.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(receiver.to('/held-elsewhere')).toHaveLength(0)
    expect(await jobsOfEvent(server, job.event_id)).toHaveLength(1)
  })

  it('brings nothing to a webhook deleted, switched off, or switched off and on since the event', async () => {
    const { owner, key } = await account()
    const paths = ['/job-deleted', '/job-off', '/job-off-on', '/job-on']
    const [deleted, off, offOn, on] = await Promise.all(paths.map((path) => createWebhook(server, key, receiver.url(path), 'ContactCreated')))
    // Written before the changes, as the fan-out of an event that occurred then.
    const job = await writeJob(server, owner.accountId, [deleted!, off!, offOn!, on!], { by: 'a-live-node', expired: false })
    expect((await server.delete(`/v1/webhooks/${deleted}`, { token: key })).status).toBe(204)
    expect((await server.put(`/v1/webhooks/${off}/toggle`, { token: key })).status).toBe(204)
    expect((await server.put(`/v1/webhooks/${offOn}/toggle`, { token: key })).status).toBe(204)
    expect((await server.put(`/v1/webhooks/${offOn}/toggle`, { token: key })).status).toBe(204)
    await server.app.platform.store.db.updateTable('webhook_jobs').set({ lease_owner: null, lease_expires_at: null }).where('id', '=', job.id).execute()

    await receiver.waitFor('/job-on', 1)
    await expect.poll(() => jobsOfEvent(server, job.event_id)).toEqual([])
    for (const path of paths.slice(0, 3)) expect(receiver.to(path)).toHaveLength(0)
    expect((await deliveriesOfEvent(server, job.event_id)).map((r) => r.webhook_id)).toEqual([on])
  })

  it('records nothing for a webhook deleted while its delivery was in flight, and the rest of the job as usual', async () => {
    const { key } = await account()
    receiver.answer('/deleted-in-flight', { hang: true })
    const deleted = await createWebhook(server, key, receiver.url('/deleted-in-flight'), 'ContactCreated')
    const kept = await createWebhook(server, key, receiver.url('/kept-in-job'), 'ContactCreated')
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550103' } })).status).toBe(201)
    const [request] = await receiver.waitFor('/deleted-in-flight', 1)
    const eventId = String(request!.headers['webhook-id'])
    expect((await server.delete(`/v1/webhooks/${deleted}`, { token: key })).status).toBe(204)
    // The hung attempt fails at the timeout; by then its webhook is gone, so it leaves no row and no log.
    await expect.poll(() => jobsOfEvent(server, eventId), { timeout: TIMEOUT_MS + 10_000 }).toEqual([])
    expect((await deliveriesOfEvent(server, eventId)).map((r) => [r.webhook_id, r.status])).toEqual([[kept, 'delivered']])
    expect(await server.app.platform.store.db.selectFrom('webhook_logs').select('id').where('webhook_id', '=', deleted).execute()).toEqual([])
    expect((await waitForLogs(server, key, kept, 1)).map((log) => log.eventId)).toEqual([eventId])
  })

  it('gives a webhook at its bound its further deliveries as rows, attempted once it has room', async () => {
    const { owner, key } = await account()
    // The first four attempts hang until the timeout; the rest are answered.
    receiver.answer('/at-bound', (_request, nth) => (nth <= 4 ? { hang: true } : { status: 200 }))
    const id = await createWebhook(server, key, receiver.url('/at-bound'), 'ContactCreated')
    const numbers = Array.from({ length: 12 }, (_, i) => `+1415557${String(1000 + i)}`)
    expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(',') } })).body.created).toBe(12)
    await receiver.waitFor('/at-bound', 4)
    // While four hang, the others wait as due rows rather than in this node's hands.
    await expect
      .poll(async () => Number((await server.app.platform.store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('webhook_id', '=', id).where('attempts', '=', 0).executeTakeFirstOrThrow()).n))
      .toBe(8)
    expect(receiver.to('/at-bound')).toHaveLength(4)

    // Each event arrives answered once: the four that hung on their retry. On a loaded
    // machine an answered attempt can outlast the timeout too, and is answered on its retry.
    await receiver.waitFor('/at-bound', 16, TIMEOUT_MS + 30_000)
    await waitForLogs(server, key, id, 16)
    let answered: any[] = []
    await expect
      .poll(async () => new Set((answered = (await logsOf(server, key, id)).filter((log) => log.success)).map((log) => log.eventId)).size, { timeout: 30_000, interval: 50 })
      .toBe(12)
    expect(answered).toHaveLength(12)
    await expect.poll(() => server.app.platform.store.db.selectFrom('webhook_jobs').select('id').where('account_id', '=', owner.accountId).execute()).toEqual([])
  }, 120_000)

  it('cut short by a stop goes back to the queue, and the next run attempts what was not recorded', async () => {
    const own = await startWebhookServer({ config: { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: 10_000 } })
    const { key } = await account(own)
    receiver.answer('/stopped-hanging', (_request, nth) => (nth === 1 ? { hang: true } : { status: 200 }))
    const hanging = await createWebhook(own, key, receiver.url('/stopped-hanging'), 'ContactCreated')
    const answered = await createWebhook(own, key, receiver.url('/stopped-answered'), 'ContactCreated')
    expect((await own.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550102' } })).status).toBe(201)
    const [request] = await receiver.waitFor('/stopped-hanging', 1)
    await waitForLogs(own, key, answered, 1)
    await own.close()

    const eventId = String(request!.headers['webhook-id'])
    const store = openStore(own.config.database)
    try {
      const jobs = await store.db.selectFrom('webhook_jobs').select(['lease_owner', 'webhook_ids']).where('event_id', '=', eventId).execute()
      expect(jobs).toEqual([{ lease_owner: null, webhook_ids: expect.stringContaining(hanging) }])
    } finally {
      await store.close()
    }

    const next = await startWebhookServer({ database: own.config.database, config: { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: 10_000 } })
    try {
      const again = await receiver.waitFor('/stopped-hanging', 2)
      expect(again[1]!.headers['webhook-id']).toBe(eventId)
      // The attempt cut short left no log: the one answered is attempt 1.
      expect((await waitForLogs(next, key, hanging, 1)).map((log) => [log.attempt, log.statusCode])).toEqual([[1, 200]])
      await expect.poll(() => jobsOfEvent(next, eventId)).toEqual([])
      expect(receiver.to('/stopped-answered')).toHaveLength(1)
    } finally {
      await next.close()
    }
  })
})
