/**
 * The SMPP link's metrics, with CARRIER=smpp against the test SMSC (a process of its own
 * speaking SMPP 3.4): bind state, window and the SMSC's "not now" answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { TestSmsc } from '../support/smsc/control.js'

let smsc: TestSmsc
let server: TestServer

beforeAll(async () => {
  smsc = await TestSmsc.start({ systemId: 'platform', password: 'secret1' })
  await smsc.setReceipts('on')
  server = await startServer({ config: { carrier: 'smpp', smppUrl: smsc.url(), smppWindow: 10, smppMaxPerSecond: 1000, adminToken: TEST_ADMIN_TOKEN, metricsEnabled: true } })
})
afterAll(async () => {
  await server?.close()
  await smsc?.stop()
})

/** The value of one sample, e.g. `smpp_bound` or `sms_recipient_transitions_total{from="queued",...}`; 0 when absent. */
async function sample(series: string): Promise<number> {
  const response = await server.get('/metrics')
  expect(response.status).toBe(200)
  const line = response.text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe('SMPP metrics', () => {
  it('show the bind, the window, throttled answers and the moves at the smpp carrier', async () => {
    await expect.poll(() => sample('smpp_bound'), { timeout: 10_000, interval: 50 }).toBe(1)
    expect(await sample('smpp_window_size')).toBe(10)

    const alice = await signUp(server)
    const key = await createKey(server, alice)
    await topUp(server, alice.accountId, 100)
    await smsc.throttleNext(1)
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+4915100001234'], content: 'Throttled once', senderId: 'Acme' } })
    expect(sent.status).toBe(201)

    await expect
      .poll(() => sample('sms_recipient_transitions_total{from="sent",to="delivered",carrier="smpp"}'), { timeout: 15_000, interval: 50 })
      .toBe(1)
    expect(await sample('smpp_throttled_answers_total{status="throttled"}')).toBe(1)
    expect(await sample('sms_recipient_transitions_total{from="queued",to="sent",carrier="smpp"}')).toBe(1)
    expect(await sample('sms_parts_submitted_total{carrier="smpp",outcome="accepted"}')).toBe(1)
    expect(await sample('smpp_window_in_use')).toBe(0)
    expect(await sample('smpp_waiting_parts')).toBe(0)

    await smsc.stop()
    await expect.poll(() => sample('smpp_bound'), { timeout: 10_000, interval: 50 }).toBe(0)
  })
})
