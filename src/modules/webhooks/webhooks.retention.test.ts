import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { newId } from '../../platform/ids.js'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, logsOf, startWebhookServer, waitForLogs } from '../../../test/support/webhook-fixtures.js'

const DAY_MS = 86_400_000
let server: TestServer
let receiver: HttpsReceiver
let alice: TestAccount
let key: string
// The wall clock to begin with, so signatures carry a current timestamp; then moved on by hand.
const clock = new ManualClock(new Date())

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer({ clock, config: { webhookLogRetentionDays: 30 } })
  alice = await signUp(server)
  key = await createKey(server, alice)
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

const db = () => server.app.platform.store.db
const count = async (table: 'webhook_logs' | 'webhook_deliveries', webhookId: string) =>
  Number((await db().selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('webhook_id', '=', webhookId).executeTakeFirstOrThrow()).n)

describe('retention', () => {
  it('deletes logs and finished deliveries older than WEBHOOK_LOG_RETENTION_DAYS, and keeps younger ones', async () => {
    const id = await createWebhook(server, key, receiver.url('/kept'), 'ContactCreated')
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155559001' } })).status).toBe(201)
    await waitForLogs(server, key, id, 1)
    expect(await count('webhook_deliveries', id)).toBe(1)

    clock.advance(29 * DAY_MS)
    const young = (await server.post('/v1/webhooks/test', { token: key, body: { webhookId: id, payload: '{"young":true}' } })).body
    expect(await server.app.platform.webhooks.purgeExpired()).toEqual({ logs: 0, deliveries: 0 })

    clock.advance(2 * DAY_MS)
    expect(await server.app.platform.webhooks.purgeExpired()).toEqual({ logs: 1, deliveries: 1 })
    expect(await logsOf(server, key, id)).toEqual([young])
    expect(await count('webhook_deliveries', id)).toBe(1)
  })

  it('deletes in bounded batches until nothing old is left', async () => {
    const id = await createWebhook(server, key, receiver.url('/bulk'), 'OptOut')
    const oldAt = new Date(clock.now().getTime() - 40 * DAY_MS)
    const old = oldAt.toISOString()
    // A state the API cannot reach quickly: thousands of attempts made long ago.
    const deliveryId = newId(oldAt)
    await db().insertInto('webhook_deliveries').values({
      id: deliveryId, webhook_id: id, account_id: alice.accountId, event_id: newId(), event_type: 'OptOut', payload: '{}',
      status: 'failed', next_attempt_at: null, last_attempt_at: old, created_at: old, lease_owner: null, lease_expires_at: null,
    }).execute()
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      id: newId(oldAt), delivery_id: deliveryId, webhook_id: id, account_id: alice.accountId, event_id: newId(), event_type: 'OptOut',
      attempt: i + 1, status_code: 500, success: 0, duration_ms: 1, error: 'the endpoint answered 500', response_body: null, delivered_at: old,
    }))
    for (let i = 0; i < rows.length; i += 500) await db().insertInto('webhook_logs').values(rows.slice(i, i + 500)).execute()

    expect(await server.app.platform.webhooks.purgeExpired()).toEqual({ logs: 2500, deliveries: 1 })
    expect(await count('webhook_logs', id)).toBe(0)
    expect(await count('webhook_deliveries', id)).toBe(0)
  })
})
