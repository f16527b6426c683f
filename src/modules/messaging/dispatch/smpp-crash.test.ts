/**
 * SIGKILL of a server process while it hands a broadcast to an SMSC over SMPP, again and
 * again. An SMSC cannot be asked what it already holds, so a part submitted but not yet
 * recorded when the process dies is submitted again after the restart: some repeats are
 * the price of losing nothing. The test bounds them, and checks nothing is lost and every
 * credit is debited once.
 */
import { randomInt } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { contactsCsv, usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { TestSmsc, type SubmitStats } from '../../../../test/support/smsc/control.js'
import { duplicates, unrecordedBySession } from '../../../../test/support/smsc/repeats.js'
import { testStoreKind } from '../../../../test/support/store.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }
const RECIPIENTS = 3_000
const PARTS = 2
const CREDITS = 10_000
const WINDOW = 10
const KILLS = 10
/** 200 GSM-7 characters: two parts of at most 153. */
const CONTENT = 'Spring sale: everything in store is 20 percent off until Sunday, and members get free delivery on orders above 30 euros. '.repeat(2).slice(0, 200)
/** PostgreSQL runs two nodes on the store, as a deployment would; SQLite has one writer. */
const NODES = testStoreKind === 'postgres' ? 2 : 1
/** Each answer waits this long, so a full window of submits is in flight when a kill lands. */
const SUBMIT_LATENCY_MS = 10
/**
 * The answers' wait while a killed node restarts (seconds on two cores): the other node
 * then crawls instead of sending the rest, so the broadcast outlasts every kill.
 */
const RESTART_LATENCY_MS = 1_000
/** Parts the SMSC accepts between one restart and the next kill: at random in this range. */
const ACCEPTED_BETWEEN_KILLS = { min: 50, max: 300 }

const children: ChildServer[] = []
let smsc: TestSmsc | undefined
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()))
  await smsc?.stop()
})

async function startNode(databaseUrl: string, smscUrl: string): Promise<ChildServer> {
  const child = await ChildServer.start(databaseUrl, {
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    CARRIER: 'smpp',
    SMPP_URL: smscUrl,
    SMPP_WINDOW: String(WINDOW),
    SMPP_MAX_PER_SECOND: '5000',
    // A dead node's claims return to the queue this soon on PostgreSQL. Not shorter: a
    // live node whose renewals a loaded machine holds up past its lease loses claims on
    // parts it has in flight, and those go again beside the kills' (a CI run at 1.5 s
    // saw a session that was never killed repeat 57 parts).
    LEASE_TTL_MS: '3000',
  })
  children.push(child)
  return child
}

/** Every (number, sequence) of the broadcast the SMSC never accepted. */
async function missingParts(smsc: TestSmsc): Promise<string[]> {
  const accepted = new Set((await smsc.state()).submits.map((s) => `${s.destinationAddr}/${s.concat?.sequence ?? 1}`))
  const missing: string[] = []
  for (let i = 0; i < RECIPIENTS; i++) {
    for (let sequence = 1; sequence <= PARTS; sequence++) {
      const part = `${usNumber(i).slice(1)}/${sequence}`
      if (!accepted.has(part)) missing.push(part)
    }
  }
  return missing
}

describe('SMPP dispatch killed with SIGKILL again and again', () => {
  it('repeats at most a window of parts per killed connection, loses none, and debits each recipient once', async () => {
    const startedAt = performance.now()
    smsc = await TestSmsc.start(CREDENTIALS)
    await smsc.setSubmitLatency(SUBMIT_LATENCY_MS)
    const { url } = await childDatabase()
    const nodes: ChildServer[] = []
    // One after the other: the first applies the migrations.
    for (let i = 0; i < NODES; i++) nodes.push(await startNode(url, smsc.url()))
    const api = () => nodes.find((node) => node.running)!

    const owner = await signUp(api())
    const key = await createKey(api(), owner)
    await topUp(api(), owner.accountId, CREDITS)
    const list = (await api().post('/v1/contact-lists', { token: key, body: { name: 'everyone' } })).body as string
    const imported = await api().post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(RECIPIENTS), contentType: 'text/csv' })
    await expect
      .poll(async () => (await api().get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 30_000, interval: 100 })
      .toBe('completed')

    const broadcast = (await api().post('/v1/broadcasts', { token: key, body: { name: 'crash', message: CONTENT, senderId: 'Acme', contactListId: list } })).body as string
    const sent = await api().post(`/v1/broadcasts/${broadcast}/send`, { token: key })
    expect(sent.status).toBe(202)
    expect(sent.body).toMatchObject({ recipients: RECIPIENTS, creditsUsed: RECIPIENTS * PARTS })

    const atKills: SubmitStats[] = []
    for (let kill = 0; kill < KILLS; kill++) {
      await smsc.setSubmitLatency(SUBMIT_LATENCY_MS)
      const target = (await smsc.submitStats()).accepted + randomInt(ACCEPTED_BETWEEN_KILLS.min, ACCEPTED_BETWEEN_KILLS.max + 1)
      await expect
        .poll(async () => (await smsc!.submitStats()).accepted, { timeout: 30_000, interval: 20, message: `kill ${kill + 1}: the SMSC never reached ${target} parts` })
        .toBeGreaterThanOrEqual(target)
      const victim = kill % NODES
      await nodes[victim]!.kill('SIGKILL')
      atKills.push(await smsc.submitStats())
      // Alone on the store, a node has nobody to slow down while it restarts.
      if (NODES > 1) await smsc.setSubmitLatency(RESTART_LATENCY_MS)
      nodes[victim] = await startNode(url, smsc.url())
    }
    // Nothing is killed any more: the rest may go as fast as it can.
    await smsc.setSubmitLatency(0)
    // Precondition: the last kill landed before the broadcast was handed over whole.
    expect(atKills.at(-1)!.distinctParts).toBeLessThan(RECIPIENTS * PARTS)

    let progress: any
    await expect
      .poll(async () => (progress = (await api().get(`/v1/broadcasts/${broadcast}`, { token: key })).body).sent, { timeout: 60_000, interval: 200 })
      .toBe(RECIPIENTS)
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${JSON.stringify(progress)}\n${nodes.map((n) => n.stderr.slice(-2000)).join('\n')}`)
      })

    const stats = await smsc.submitStats()
    const repeats = duplicates(stats)
    const bySession = unrecordedBySession(stats)
    console.log(
      `smpp-crash (${testStoreKind}, ${NODES} node(s)): ${KILLS} kills after ${atKills.map((s) => s.accepted).join(', ')} accepted parts; ` +
        `${stats.accepted} accepted for ${RECIPIENTS * PARTS} parts, ${repeats} duplicates (bound ${WINDOW * KILLS}); ` +
        `repeats by session ${JSON.stringify(Object.fromEntries(bySession))}; ${Math.round(performance.now() - startedAt)} ms`,
    )

    // Soft: one run reports every broken promise, not the first alone.
    expect.soft(await missingParts(smsc), 'parts the SMSC never accepted').toEqual([])
    // A killed connection can repeat only what it had submitted and not yet recorded: a
    // window's worth at most, so a window per kill in all, and per connection.
    expect.soft(repeats, `${repeats} duplicate parts after ${KILLS} kills`).toBeLessThanOrEqual(WINDOW * KILLS)
    for (const [session, count] of bySession) {
      expect.soft(count, `parts repeated from SMPP session ${session}`).toBeLessThanOrEqual(WINDOW)
    }
    expect.soft(progress).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, creditsUsed: RECIPIENTS * PARTS })
    expect.soft((await api().get('/v1/account', { token: key })).body.balance).toBe(CREDITS - RECIPIENTS * PARTS)
    // Two nodes share one bind (binds: 1, as carriers allow one per account): a killed
    // holder's slot passes to the other node once its lease runs out, so each kill costs
    // a lease's wait before sending resumes. About 100 s on two busy cores; 220-240 s on a
    // slower machine running three other test files beside it, hence the room.
  }, 420_000)
})
