/**
 * SIGKILL of a server process (src/main.ts, a process of its own) while a route fails over
 * from SMSC A, gone with parts in doubt, to SMSC B; then a restart while A is still away.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { routingApi, smppConfig } from '../../../../test/support/routing-api.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import { TcpProxy } from '../../../../test/support/tcp-proxy.js'

const A = { systemId: 'crash-a', password: 'secret-a' }
const B = { systemId: 'crash-b', password: 'secret-b' }
const WINDOW = 10
const RECIPIENTS = 300
const CREDITS = 10_000

const children: ChildServer[] = []
const smscs: TestSmsc[] = []
const proxies: TcpProxy[] = []
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()))
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()))
  await Promise.all(smscs.splice(0).map((smsc) => smsc.stop()))
})

async function startNode(url: string): Promise<ChildServer> {
  // A dead process's claims return to the queue at an embedded restart, or after the lease on PostgreSQL.
  const child = await ChildServer.start(url, { ADMIN_TOKEN: TEST_ADMIN_TOKEN, LEASE_TTL_MS: '1500', CARRIER_DOWN_AFTER_MS: '500' })
  children.push(child)
  return child
}

/*
 * SMSC A went away with a window of parts sent and unanswered ("in doubt": A may hold
 * them, the process cannot know). The process keeps them for A (smpp.ts: they wait for
 * the rebind) and hands the rest to B. Then it is killed, and restarts while A is still
 * away. The journal records a part once a carrier accepted it, and a submit in doubt is
 * not recorded (recording each submit before it leaves would double the journal's
 * writes), so the new process hands those parts over afresh, to B once A counts as down.
 * README (Background work and crashes) says so: a crash while a carrier is unreachable can
 * send the parts in doubt to the route's next carrier too, at most a window of them per
 * connection, as a crash can repeat them at the same carrier.
 */
describe('a server killed while a route fails over', () => {
  it('hands to B, across the kill, at most the window of parts A may hold, and loses none', { timeout: 120_000 }, async () => {
    const [smscA, smscB] = await Promise.all([TestSmsc.start(A), TestSmsc.start(B)])
    smscs.push(smscA, smscB)
    await smscA.setSubmitLatency(100)
    const proxyA = await TcpProxy.start({ port: smscA.port })
    proxies.push(proxyA)
    const { url } = await childDatabase()
    let node = await startNode(url)
    const api = routingApi(() => node)
    const owner = await signUp(node)
    const key = await createKey(node, owner)
    await topUp(node, owner.accountId, CREDITS)
    const idA = await api.createCarrier({ name: 'smsc-a', type: 'smpp', config: smppConfig(A, proxyA.port, WINDOW) })
    const idB = await api.createCarrier({ name: 'smsc-b', type: 'smpp', config: smppConfig(B, smscB.port, WINDOW) })
    await api.waitForStatus(idA, 'up', 5_000)
    await api.waitForStatus(idB, 'up', 5_000)
    await api.putRoutes([{ prefix: '+', carriers: ['smsc-a', 'smsc-b'] }])

    const numbers = Array.from({ length: RECIPIENTS }, (_, i) => usNumber(30_000 + i))
    const list = (await node.post('/v1/contact-lists', { token: key, body: { name: 'failover-crash' } })).body as string
    const imported = await node.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: ['phoneNumber', ...numbers].join('\n'), contentType: 'text/csv' })
    await expect.poll(async () => (await node.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 30_000, interval: 100 }).toBe('completed')
    const broadcast = (await node.post('/v1/broadcasts', { token: key, body: { name: 'failover-crash', message: 'Doors open at 9', senderId: 'Acme', contactListId: list } })).body as string
    expect((await node.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)

    await expect.poll(async () => (await smscA.submitStats()).accepted, { timeout: 20_000, interval: 10 }).toBeGreaterThanOrEqual(60)
    await proxyA.cut()
    const atABefore = new Set((await smscA.state()).submits.map((s) => `+${s.destinationAddr}`))
    const inDoubt = (await api.waitForStatus(idA, 'down', 5_000)).state.inFlight
    expect(inDoubt).toBeGreaterThan(0)
    // B takes what A had not sent, and nothing A holds.
    await expect
      .poll(async () => new Set([...atABefore, ...(await smscB.state()).submits.map((s) => `+${s.destinationAddr}`)]).size + inDoubt, { timeout: 10_000, interval: 50 })
      .toBeGreaterThanOrEqual(RECIPIENTS)

    await node.kill('SIGKILL')
    node = await startNode(url)
    // On a loaded machine the restarted node takes a while to find A down and bind B again.
    await expect
      .poll(async () => (await node.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 60_000, interval: 200 })
      .toBe(RECIPIENTS)
      // What the restarted server logged says why, should it not get there.
      .catch((err: Error) => {
        throw new Error(`${err.message}\n--- restarted server's log (tail):\n${node.stdout.slice(-4000)}\n${node.stderr.slice(-2000)}`)
      })
    const atB = new Set((await smscB.state()).submits.map((s) => `+${s.destinationAddr}`))
    expect([...new Set([...atABefore, ...atB])].sort()).toEqual([...numbers].sort())
    // A still away: only what it holds in doubt can have reached B too, a window at most.
    const atBoth = [...atABefore].filter((n) => atB.has(n))
    expect(atBoth.length, 'numbers at both SMSCs').toBeLessThanOrEqual(WINDOW)
    // Before the kill, B took nothing A had: the failover alone never sends a part twice.
    expect(atBoth.length).toBeLessThanOrEqual(inDoubt)
  })
})
