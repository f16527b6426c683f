/**
 * Nodes sharing PostgreSQL lease the bind slots of an SMPP connection: against an SMSC
 * that takes one bind per account, only one node binds, and only that node hands over;
 * the other node's sends go out through it. When the binding node stops, another binds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import { freshDatabase, testStoreKind } from '../../../../test/support/store.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }

let smsc: TestSmsc
let first: TestServer
let second: TestServer | undefined
let account: TestAccount
let key: string

// Embedded mode (SQLite) is one process, which binds every connection: nothing to lease.
describe.skipIf(testStoreKind !== 'postgres')('SMPP binds across nodes (PostgreSQL)', () => {
  beforeAll(async () => {
    smsc = await TestSmsc.start(CREDENTIALS)
    const database = await freshDatabase()
    const config = { adminToken: TEST_ADMIN_TOKEN, carrier: 'smpp' as const, smppUrl: smsc.url(), leaseTtlMs: 6_000 }
    first = await startServer({ database, config })
    // Bound before the second node starts, so the first holds the slot. (expect.poll works in tests only.)
    for (let waited = 0; (await smsc.state()).boundSessions !== 1; waited += 50) {
      if (waited > 10_000) throw new Error('the first node did not bind within 10 s')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    second = await startServer({ database, config })
    account = await signUp(first)
    key = await createKey(first, account)
    await topUp(first, account.accountId, 1_000)
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
    await smsc?.stop()
  })

  const defaultState = async (server: TestServer) => {
    const list = await server.get('/v1/admin/carriers', { token: TEST_ADMIN_TOKEN })
    return list.body.items.find((c: any) => c.name === 'default').state
  }

  it('binds on one node only; the other leaves its recipients to it, and shows the link as the holder sees it', async () => {
    // Several bind sweeps: the second node never took a slot the first holds.
    await new Promise((resolve) => setTimeout(resolve, 4_500))
    expect((await smsc.state()).boundSessions).toBe(1)
    expect((await smsc.state()).binds.filter((b) => b.isAccepted), JSON.stringify((await smsc.state()).binds)).toHaveLength(1)
    expect(await defaultState(second!)).toMatchObject({ status: 'up', inFlight: 0 })

    const numbers = Array.from({ length: 20 }, (_, i) => `+1415555${String(1000 + i)}`)
    const sent = await second!.post('/v1/sms/send', { token: key, body: { recipients: numbers, content: 'Through the bind', senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    await expect
      .poll(async () => (await second!.get(`/v1/sms/${sent.body.messageId}`, { token: key })).body.recipients.filter((r: any) => r.status === 'sent' || r.status === 'delivered').length, { timeout: 30_000 })
      .toBe(numbers.length)
    const submits = (await smsc.state()).submits.filter((s) => numbers.includes(`+${s.destinationAddr}`))
    expect(submits.map((s) => `+${s.destinationAddr}`).sort()).toEqual([...numbers].sort())
    expect((await smsc.state()).boundSessions).toBe(1)
  })

  it('binds on another node once the holder stops', async () => {
    await first.close()
    await expect.poll(async () => (await smsc.state()).binds.filter((b) => b.isAccepted).length, { timeout: 15_000 }).toBe(2)
    await expect.poll(async () => (await smsc.state()).boundSessions, { timeout: 15_000 }).toBe(1)
    const sent = await second!.post('/v1/sms/send', { token: key, body: { recipients: ['+14155552000'], content: 'After the hand-over', senderId: 'Acme' } })
    await expect
      .poll(async () => (await second!.get(`/v1/sms/${sent.body.messageId}`, { token: key })).body.recipients[0].status, { timeout: 15_000 })
      .toMatch(/sent|delivered/)
    expect((await smsc.state()).submits.some((s) => s.destinationAddr === '14155552000')).toBe(true)
  })
})
