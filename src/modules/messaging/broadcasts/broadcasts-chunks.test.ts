/**
 * A broadcast's recipients are queued in chunks of contacts, each twice the one before up
 * to a largest size (SQLite: 2,000 growing to 4,000; PostgreSQL: 5,000 growing to
 * 100,000). Here the chunks are tiny, so a small audience crosses many chunk boundaries
 * and every size in between.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { readStore } from '../../../../test/support/store-read.js'

const ADMIN_TOKEN = 'admin-token-0123456789'

let server: TestServer

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN }, broadcastQueue: { chunkSize: 3, maxChunkSize: 16 } })
})
afterAll(() => server.close())

async function account(credits: number, on = server): Promise<{ accountId: string; key: string }> {
  const owner = await signUp(on)
  expect((await on.post(`/v1/admin/accounts/${owner.accountId}/credits`, { token: ADMIN_TOKEN, body: { amount: credits } })).status).toBe(200)
  return { accountId: owner.accountId, key: await createKey(on, owner) }
}

async function addContacts(key: string, phoneNumbers: string[], contactListId: string, on = server): Promise<string[]> {
  const response = await on.post('/v1/contacts', { token: key, body: { phoneNumbers: phoneNumbers.join(','), contactListId } })
  expect(response.status).toBe(201)
  return response.body.contactIds
}

/** The recipient rows a broadcast queued, read from the store. */
function queuedRecipients(on: TestServer, broadcast: string): Promise<{ phone_number: string; account_id: string }[]> {
  return readStore(on.config.database, 'select phone_number, account_id from message_recipients where message_id = (select message_id from broadcasts where id = $1)', [broadcast])
}

describe('a broadcast queued in growing chunks', () => {
  it('queues every member once, none opted out and none of another account whose contacts lie between, and charges exactly them', async () => {
    const sender = await account(1_000)
    const neighbour = await account(1_000)
    const list = (await server.post('/v1/contact-lists', { token: sender.key, body: { name: 'Chunked' } })).body as string
    const otherList = (await server.post('/v1/contact-lists', { token: neighbour.key, body: { name: 'Between' } })).body as string
    // The two accounts' contacts interleave in creation order, the order the walk takes.
    const members: string[] = []
    const ids: string[] = []
    for (let batch = 0; batch < 6; batch++) {
      const numbers = Array.from({ length: 10 }, (_, i) => usNumber(batch * 10 + i))
      members.push(...numbers)
      ids.push(...(await addContacts(sender.key, numbers, list)))
      await addContacts(neighbour.key, [usNumber(1_000 + batch * 2), usNumber(1_001 + batch * 2)], otherList)
    }
    const optedOut = new Set([0, 4, 17, 31, 32, 45, 59])
    for (const index of optedOut) {
      expect((await server.patch(`/v1/contacts/${ids[index]}`, { token: sender.key, body: { optedOut: true } })).status).toBe(200)
    }
    const expected = members.filter((_, index) => !optedOut.has(index))

    const broadcast = (await server.post('/v1/broadcasts', { token: sender.key, body: { name: 'Chunked', message: 'Doors open at 9', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.post(`/v1/broadcasts/${broadcast}/send`, { token: sender.key })).status).toBe(202)
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcast}`, { token: sender.key })).body.status, { timeout: 15_000, interval: 50 }).toBe('completed')

    const done = (await server.get(`/v1/broadcasts/${broadcast}`, { token: sender.key })).body
    expect(done).toMatchObject({ recipients: expected.length, creditsUsed: expected.length, sent: expected.length, delivered: expected.length, failed: 0 })
    expect((await server.get('/v1/account', { token: sender.key })).body.balance).toBe(1_000 - expected.length)
    expect((await server.get('/v1/account', { token: neighbour.key })).body.balance).toBe(1_000)
    const queued = await queuedRecipients(server, broadcast)
    expect(queued.map((row) => row.phone_number).sort()).toEqual([...expected].sort())
    expect(new Set(queued.map((row) => row.account_id))).toEqual(new Set([sender.accountId]))
  })
})

describe('a broadcast whose audience changes while it is queued, in chunks of 16 contacts', () => {
  let fixed: TestServer
  beforeAll(async () => {
    fixed = await startServer({ config: { adminToken: ADMIN_TOKEN }, broadcastQueue: { chunkSize: 16, maxChunkSize: 16 } })
  })
  afterAll(() => fixed.close())

  it('queues no more recipients than were counted and paid for: a member deleted ahead of the walk leaves room for one contact that joined, no more', async () => {
    const sender = await account(10_000, fixed)
    const list = (await fixed.post('/v1/contact-lists', { token: sender.key, body: { name: 'Growing' } })).body as string
    const members = Array.from({ length: 3_000 }, (_, i) => usNumber(5_000 + i))
    const ids = await addContacts(sender.key, members, list, fixed)
    const broadcast = (await fixed.post('/v1/broadcasts', { token: sender.key, body: { name: 'Growing', message: 'Doors open at 9', senderId: 'Acme', contactListId: list } })).body as string
    expect((await fixed.post(`/v1/broadcasts/${broadcast}/send`, { token: sender.key })).status).toBe(202)

    // The walk takes 16 contacts per transaction in creation order, 188 transactions. The
    // last member is deleted and ten contacts join before it gets there: its last chunk
    // then holds the last 7 members and the first 9 that joined, and there is room for 8.
    expect((await fixed.delete(`/v1/contacts/${ids.at(-1)}`, { token: sender.key })).status).toBe(204)
    const joined = Array.from({ length: 10 }, (_, i) => usNumber(9_000 + i))
    await addContacts(sender.key, joined, list, fixed)
    const [walk] = await readStore<{ queued: number; queue_after_id: string | null }>(fixed.config.database, 'select queued, queue_after_id from broadcasts where id = $1', [broadcast])
    expect(walk!.queue_after_id).not.toBeNull()
    expect(Number(walk!.queued)).toBeLessThan(2_990)

    await expect.poll(async () => (await fixed.get(`/v1/broadcasts/${broadcast}`, { token: sender.key })).body.status, { timeout: 60_000, interval: 100 }).toBe('completed')
    const done = (await fixed.get(`/v1/broadcasts/${broadcast}`, { token: sender.key })).body
    expect(done).toMatchObject({ recipients: 3_000, creditsUsed: 3_000, sent: 3_000, failed: 0 })
    expect((await fixed.get('/v1/account', { token: sender.key })).body.balance).toBe(7_000)
    const queued = await queuedRecipients(fixed, broadcast)
    const numbers = queued.map((row) => row.phone_number)
    expect(new Set(numbers).size).toBe(3_000)
    expect(numbers).not.toContain(members.at(-1))
    expect(numbers.filter((n) => joined.includes(n))).toEqual([joined[0]])
  }, 90_000)
})
