import { writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../test/support/child-server.js'
import { createKey, signUp } from '../../../test/support/fixtures.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { testStoreKind } from '../../../test/support/store.js'
import { createWebhook, logsOf, verifySignature, secretOf, waitForLogs } from '../../../test/support/webhook-fixtures.js'

let receiver: HttpsReceiver
let env: Record<string, string>
const children: ChildServer[] = []

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  // Server processes trust the receivers' CA the way any deployment would: NODE_EXTRA_CA_CERTS.
  const caFile = join(mkdtempSync(join(tmpdir(), 'mp-ca-')), 'ca.pem')
  writeFileSync(caFile, receiver.ca.caPem)
  env = {
    NODE_EXTRA_CA_CERTS: caFile,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '2s,2s',
    WEBHOOK_TIMEOUT_MS: '5000',
    LEASE_TTL_MS: '1500',
  }
})
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()))
})
afterAll(() => receiver.close())

async function start(url: string, overrides: Record<string, string> = {}): Promise<ChildServer> {
  const child = await ChildServer.start(url, { ...env, ...overrides })
  children.push(child)
  return child
}

describe('deliveries across a crash', () => {
  it('makes a retry that fell due during the crash as the next attempt, and an attempt cut short again', async () => {
    const { url } = await childDatabase()
    const first = await start(url)
    const owner = await signUp(first)
    const key = await createKey(first, owner)
    receiver.answer('/crash-retry', (_request, nth) => (nth === 1 ? { status: 500 } : { status: 200 }))
    receiver.answer('/crash-in-flight', (_request, nth) => (nth === 1 ? { hang: true } : { status: 200 }))
    const retried = await createWebhook(first, key, receiver.url('/crash-retry'), 'ContactCreated')
    const cut = await createWebhook(first, key, receiver.url('/crash-in-flight'), 'ContactCreated')
    expect((await first.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155551001' } })).status).toBe(201)
    await waitForLogs(first, key, retried, 1)
    await receiver.waitFor('/crash-in-flight', 1)
    // Killed with one retry scheduled about 2 s ahead and one attempt awaiting its answer.
    await first.kill('SIGKILL')
    expect(receiver.to('/crash-retry')).toHaveLength(1)

    // Embedded: what the dead run held is reclaimed at start. PostgreSQL: once its lease runs out.
    const second = await start(url)
    const retries = await receiver.waitFor('/crash-retry', 2)
    expect((await waitForLogs(second, key, retried, 2)).map((l) => [l.attempt, l.statusCode])).toEqual([[1, 500], [2, 200]])
    expect(retries[1]!.headers['webhook-id']).toBe(retries[0]!.headers['webhook-id'])
    expect(verifySignature(await secretOf(second, key, retried), retries[1]!)).toMatchObject({ event: 'ContactCreated', phoneNumber: '+14155551001' })

    const again = await receiver.waitFor('/crash-in-flight', 2)
    expect(again[1]!.headers['webhook-id']).toBe(again[0]!.headers['webhook-id'])
    // The attempt cut short left no log: the one that was answered is attempt 1.
    expect((await waitForLogs(second, key, cut, 1)).map((l) => [l.attempt, l.statusCode, l.success])).toEqual([[1, 200, true]])
  }, 120_000)
})

describe.skipIf(testStoreKind !== 'postgres')('two server processes on one PostgreSQL', () => {
  const EVENTS = 50

  it('attempt each delivery once per attempt, never twice at once', async () => {
    const { url } = await childDatabase()
    const [a, b] = await Promise.all([start(url, { WEBHOOK_RETRY_SCHEDULE: '500ms' }), start(url, { WEBHOOK_RETRY_SCHEDULE: '500ms' })])
    const owner = await signUp(a)
    const key = await createKey(a, owner)
    const seen = new Set<string>()
    // Each event fails once at each webhook, then succeeds: two attempts apiece.
    const firstFails = (request: { headers: Record<string, unknown>; path: string }) => {
      const id = `${request.path} ${String(request.headers['webhook-id'])}`
      if (seen.has(id)) return { status: 200 }
      seen.add(id)
      return { status: 500 }
    }
    const paths = ['/pair-1', '/pair-2']
    const ids: string[] = []
    for (const path of paths) {
      receiver.answer(path, firstFails)
      ids.push(await createWebhook(b, key, receiver.url(path), 'ContactCreated'))
    }
    const numbers = Array.from({ length: EVENTS }, (_, i) => `+1415555${2000 + i}`)
    expect((await a.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(',') } })).body.created).toBe(EVENTS)

    for (const path of paths) await receiver.waitFor(path, 2 * EVENTS, 60_000)
    for (const [i, path] of paths.entries()) {
      const byEvent = new Map<string, number>()
      for (const r of receiver.to(path)) byEvent.set(String(r.headers['webhook-id']), (byEvent.get(String(r.headers['webhook-id'])) ?? 0) + 1)
      expect(byEvent.size).toBe(EVENTS)
      expect([...byEvent.values()].every((n) => n === 2)).toBe(true)
      const logs = await waitForLogs(a, key, ids[i]!, 2 * EVENTS)
      expect(logs.filter((l) => l.attempt === 1).every((l) => l.statusCode === 500)).toBe(true)
      expect(logs.filter((l) => l.attempt === 2).every((l) => l.statusCode === 200)).toBe(true)
      expect(logs).toHaveLength(2 * EVENTS)
    }
    // Nothing more arrives: no delivery was left to be attempted a third time.
    await expect.poll(async () => (await logsOf(b, key, ids[0]!)).length).toBe(2 * EVENTS)
    expect(receiver.to('/pair-1')).toHaveLength(2 * EVENTS)
  }, 180_000)
})
