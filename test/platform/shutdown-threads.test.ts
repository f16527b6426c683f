import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ChildServer } from '../support/child-server.js'
import { contactsCsv } from '../support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../support/fixtures.js'
import { HttpsReceiver } from '../support/https-receiver.js'
import { createWebhook, waitForLogs } from '../support/webhook-fixtures.js'

// Every Node.js line CI runs this on (20, 24, 26): better-sqlite3 12 aborted Node.js 24
// when statements were finalized on worker threads. So the server runs on a SQLite file
// in both test passes, and its import writer, reader, writer and maintenance threads all
// do real work before SIGTERM.
const CONTACTS = 3_000

let receiver: HttpsReceiver
let caFile: string
let child: ChildServer | undefined

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  caFile = join(mkdtempSync(join(tmpdir(), 'mp-ca-')), 'ca.pem')
  writeFileSync(caFile, receiver.ca.caPem)
})
afterEach(async () => {
  await child?.kill()
  child = undefined
})
afterAll(() => receiver.close())

function exited(server: ChildServer): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const process = server.process
  if (process.exitCode !== null || process.signalCode !== null) return Promise.resolve({ code: process.exitCode, signal: process.signalCode })
  return new Promise((resolve) => process.once('exit', (code, signal) => resolve({ code, signal })))
}

describe(`a server on SQLite under Node.js ${process.versions.node}`, () => {
  it('exits with code 0 on SIGTERM after an import, a segment count, a broadcast and webhook deliveries, without an abort', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mp-threads-')), 'db.sqlite')
    child = await ChildServer.start(`sqlite:${path}`, {
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      NODE_EXTRA_CA_CERTS: caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      SIMULATOR_DELIVERY_DELAY_MS: '50',
    })
    const server = child
    const owner = await signUp(server)
    const key = await createKey(server, owner)
    await topUp(server, owner.accountId, CONTACTS)
    receiver.answer('/threads', { status: 200 })
    const webhook = await createWebhook(server, key, receiver.url('/threads'), 'ContactCreated')

    // The import writer thread, then the writer thread (webhook fan-out and deliveries).
    const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'everyone' } })).body as string
    const imported = await server.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(CONTACTS), contentType: 'text/csv' })
    expect(imported.status).toBe(202)
    await expect
      .poll(async () => (await server.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 60_000, interval: 100 })
      .toBe('completed')
    await waitForLogs(server, key, webhook, 1)

    // The reader thread: a segment's count and preview.
    const segment = await server.post('/v1/audience/segments', {
      token: key,
      body: { name: 'all', rulesOperator: 'AND', rules: JSON.stringify([{ field: 'phoneNumber', operator: 'startsWith', value: '+1' }]) },
    })
    expect(segment.status).toBe(201)
    const preview = await server.get(`/v1/audience/segments/${segment.body}/preview?limit=5`, { token: key })
    expect(preview.status).toBe(200)

    // A broadcast in dispatch when the signal comes.
    const broadcast = (await server.post('/v1/broadcasts', { token: key, body: { name: 'threads', message: 'Hello', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 30_000, interval: 20 }).toBeGreaterThan(0)

    const exit = exited(server)
    server.process.kill('SIGTERM')
    const outcome = await exit
    const output = `${server.stdout.slice(-3000)}\n${server.stderr.slice(-3000)}`
    expect(outcome, output).toEqual({ code: 0, signal: null })
    expect(server.stderr).not.toMatch(/Assertion failed|Segmentation fault|FATAL ERROR/)
    expect(server.stdout).not.toMatch(/Assertion failed/)
  }, 120_000)
})
