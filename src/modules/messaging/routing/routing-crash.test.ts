/**
 * SIGKILL of a server process (src/main.ts, a process of its own) while it hands a
 * broadcast to two SMPP connections, each the other's failover; then a restart on the same
 * store. The journal (carrier_parts) holds each part a carrier accepted as it accepted it,
 * so the restarted process hands over only what was not recorded: the parts in flight at
 * the kill, sent again to the first carrier of their route that takes them.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { routingApi, smppConfig } from '../../../../test/support/routing-api.js'
import { readStore } from '../../../../test/support/store-read.js'
import { TestSmsc, type AcceptedSubmit } from '../../../../test/support/smsc/control.js'
import type { DatabaseConfig } from '../../../platform/config.js'

const A = { systemId: 'crash-a', password: 'secret-a' }
const B = { systemId: 'crash-b', password: 'secret-b' }
const WINDOW = 10
/** Half to +1 (A first), half to +44 (B first). */
const PER_COUNTRY = 1_000
const RECIPIENTS = 2 * PER_COUNTRY
const CREDITS = 10_000

const children: ChildServer[] = []
const smscs: TestSmsc[] = []
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()))
  await Promise.all(smscs.splice(0).map((smsc) => smsc.stop()))
})

async function startNode(url: string): Promise<ChildServer> {
  // A dead process's claims return to the queue at an embedded restart, or after the lease on PostgreSQL.
  const child = await ChildServer.start(url, { ADMIN_TOKEN: TEST_ADMIN_TOKEN, LEASE_TTL_MS: '1500' })
  children.push(child)
  return child
}

const ukNumber = (i: number) => `+447911${String(100_000 + i).padStart(6, '0')}`
const digits = (e164: string) => e164.replace(/^\+/, '')

/** The journal and the recipients, read straight from the store. */
async function journal(database: DatabaseConfig, broadcastId: string): Promise<{ phone: string; carrier: string | null; status: string; connection: string | null; carrierMessageId: string | null }[]> {
  const query = `select r.phone_number as phone, r.carrier as carrier, r.status as status, p.connection as connection, p.carrier_message_id as carrier_message_id
    from message_recipients r join messages m on m.id = r.message_id left join carrier_parts p on p.recipient_id = r.id
    where m.broadcast_id = $1`
  type Row = { phone: string; carrier: string | null; status: string; connection: string | null; carrier_message_id: string | null }
  const toRow = (row: Row) => ({ phone: row.phone, carrier: row.carrier, status: row.status, connection: row.connection, carrierMessageId: row.carrier_message_id })
  return (await readStore<Row>(database, query, [broadcastId])).map(toRow)
}

describe('a server killed while it hands a broadcast to two SMPP connections', () => {
  it('hands each part to one carrier only, across the kill: the journal and both SMSCs agree', async () => {
    const startedAt = performance.now()
    const [smscA, smscB] = await Promise.all([TestSmsc.start(A), TestSmsc.start(B)])
    smscs.push(smscA, smscB)
    // Answers wait 10 ms: a window of submits is in flight at each SMSC when the kill lands.
    await Promise.all([smscA.setSubmitLatency(10), smscB.setSubmitLatency(10)])
    const { url, database } = await childDatabase()
    let node = await startNode(url)
    const api = routingApi(() => node)

    const owner = await signUp(node)
    const key = await createKey(node, owner)
    await topUp(node, owner.accountId, CREDITS)
    const idA = await api.createCarrier({ name: 'smsc-a', type: 'smpp', config: smppConfig(A, smscA.port, WINDOW) })
    const idB = await api.createCarrier({ name: 'smsc-b', type: 'smpp', config: smppConfig(B, smscB.port, WINDOW) })
    await api.waitForStatus(idA, 'up', 5_000)
    await api.waitForStatus(idB, 'up', 5_000)
    await api.putRoutes([
      { prefix: '+', carriers: ['smsc-a', 'smsc-b'] },
      { prefix: '+1', carriers: ['smsc-a', 'smsc-b'] },
      { prefix: '+44', carriers: ['smsc-b', 'smsc-a'] },
    ])

    const numbers = [...Array.from({ length: PER_COUNTRY }, (_, i) => usNumber(20_000 + i)), ...Array.from({ length: PER_COUNTRY }, (_, i) => ukNumber(i))]
    const list = (await node.post('/v1/contact-lists', { token: key, body: { name: 'crash' } })).body as string
    const csv = ['phoneNumber', ...numbers].join('\n')
    const imported = await node.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: csv, contentType: 'text/csv' })
    expect(imported.status, imported.text).toBe(202)
    await expect.poll(async () => (await node.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 30_000, interval: 100 }).toBe('completed')
    const broadcast = (await node.post('/v1/broadcasts', { token: key, body: { name: 'crash', message: 'Last call: the sale ends at midnight', senderId: 'Acme', contactListId: list } })).body as string
    const sent = await node.post(`/v1/broadcasts/${broadcast}/send`, { token: key })
    expect(sent.status, sent.text).toBe(202)
    expect(sent.body).toMatchObject({ recipients: RECIPIENTS, creditsUsed: RECIPIENTS })

    // Both SMSCs are taking parts when the process dies.
    const accepted = async (smsc: TestSmsc) => (await smsc.submitStats()).accepted
    await expect.poll(async () => Math.min(await accepted(smscA), await accepted(smscB)), { timeout: 30_000, interval: 10 }).toBeGreaterThanOrEqual(150)
    await node.kill('SIGKILL')
    const atKill = { a: await accepted(smscA), b: await accepted(smscB) }
    expect(atKill.a + atKill.b).toBeLessThan(RECIPIENTS)

    await Promise.all([smscA.setSubmitLatency(0), smscB.setSubmitLatency(0)])
    node = await startNode(url)
    let progress: any
    await expect
      .poll(async () => (progress = (await node.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).sent, { timeout: 40_000, interval: 200 })
      .toBe(RECIPIENTS)
    expect(progress).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, failed: 0, creditsUsed: RECIPIENTS })
    expect(await api.balance(key)).toBe(CREDITS - RECIPIENTS)

    const atA = (await smscA.state()).submits
    const atB = (await smscB.state()).submits
    const numbersAt = (submits: AcceptedSubmit[]) => new Set(submits.map((s) => `+${s.destinationAddr}`))
    const [numbersAtA, numbersAtB] = [numbersAt(atA), numbersAt(atB)]
    // Both carriers were up throughout: each number at its route's first carrier, none at both.
    expect([...numbersAtA].sort()).toEqual(numbers.filter((n) => n.startsWith('+1')).sort())
    expect([...numbersAtB].sort()).toEqual(numbers.filter((n) => n.startsWith('+44')).sort())
    // What the kill left in doubt was sent again to the same SMSC: a window at most, per SMSC.
    const repeats = { a: atA.length - numbersAtA.size, b: atB.length - numbersAtB.size }
    expect(repeats.a).toBeLessThanOrEqual(WINDOW)
    expect(repeats.b).toBeLessThanOrEqual(WINDOW)

    // One journal row per recipient, at the link of the SMSC that has it, under the id it gave last.
    const lastId = new Map([...atA, ...atB].map((s) => [`+${s.destinationAddr}`, s.messageId]))
    const linkA = `${A.systemId}@127.0.0.1:${smscA.port}`
    const linkB = `${B.systemId}@127.0.0.1:${smscB.port}`
    const rows = await journal(database, broadcast)
    expect(rows).toHaveLength(RECIPIENTS)
    const wrong = rows.filter((row) => {
      const [carrier, link] = numbersAtA.has(row.phone) ? ['smsc-a', linkA] : ['smsc-b', linkB]
      return row.carrier !== carrier || row.connection !== link || row.carrierMessageId !== lastId.get(row.phone) || !['sent', 'delivered'].includes(row.status)
    })
    expect(wrong).toEqual([])
    console.log(
      `routing-crash: killed at ${atKill.a} + ${atKill.b} accepted; repeats after the restart ${repeats.a} at A, ${repeats.b} at B; ${Math.round(performance.now() - startedAt)} ms`,
    )
  }, 90_000)
})
