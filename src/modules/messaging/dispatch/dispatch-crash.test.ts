import { afterEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { contactsCsv } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { readStore } from '../../../../test/support/store-read.js'
import type { DatabaseConfig } from '../../../platform/config.js'

const RECIPIENTS = 20_000
const CREDITS = 50_000
const ENV = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, SIMULATOR_DELIVERY_DELAY_MS: '200', DISPATCH_BATCH_SIZE: '250', LEASE_TTL_MS: '2000' }

const children: ChildServer[] = []
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()))
})

async function start(url: string): Promise<ChildServer> {
  const child = await ChildServer.start(url, ENV)
  children.push(child)
  return child
}

/** What the simulated carrier's own books say it was handed, read straight from the store. */
async function carrierBooks(database: DatabaseConfig): Promise<{ parts: number; maxSubmissions: number; distinctNumbers: number }> {
  const query = 'select count(*) as parts, max(submissions) as max_submissions, count(distinct to_number) as numbers from simulator_messages'
  const [row] = await readStore<{ parts: number | string; max_submissions: number | string; numbers: number | string }>(database, query)
  // PostgreSQL answers count(*) as bigint, which pg reads as text.
  return { parts: Number(row!.parts), maxSubmissions: Number(row!.max_submissions), distinctNumbers: Number(row!.numbers) }
}

describe('a broadcast cut short by SIGKILL mid-dispatch', () => {
  it('hands every recipient to the carrier exactly once after the restart, debits once, and completes', async () => {
    const { url, database } = await childDatabase()
    const first = await start(url)
    const owner = await signUp(first)
    const key = await createKey(first, owner)
    await topUp(first, owner.accountId, CREDITS)

    const list = (await first.post('/v1/contact-lists', { token: key, body: { name: 'everyone' } })).body as string
    const imported = await first.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(RECIPIENTS), contentType: 'text/csv' })
    await expect
      .poll(async () => (await first.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 60_000, interval: 100 })
      .toBe('completed')

    const broadcast = (await first.post('/v1/broadcasts', { token: key, body: { name: 'crash', message: 'Sale today', senderId: 'Acme', contactListId: list } })).body as string
    const sent = await first.post(`/v1/broadcasts/${broadcast}/send`, { token: key })
    expect(sent.status).toBe(202)
    expect(sent.body).toMatchObject({ recipients: RECIPIENTS, creditsUsed: RECIPIENTS })

    // Killed while the dispatcher is part-way through.
    await expect
      .poll(async () => (await first.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 60_000, interval: 5 })
      .toBeGreaterThan(0)
    await first.kill('SIGKILL')
    const atCrash = await carrierBooks(database)
    expect(atCrash.parts).toBeGreaterThan(0)
    expect(atCrash.parts).toBeLessThan(RECIPIENTS)

    const second = await start(url)
    let progress: any
    await expect
      .poll(async () => (progress = (await second.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).status, { timeout: 120_000, interval: 200 })
      .toBe('completed')
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${JSON.stringify(progress)}\n${second.stdout.slice(-4000)}\n${second.stderr.slice(-2000)}`)
      })
    expect(progress).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, creditsUsed: RECIPIENTS })
    expect(progress).toMatchObject({ delivered: RECIPIENTS, failed: 0 })

    const books = await carrierBooks(database)
    expect(books).toEqual({ parts: RECIPIENTS, maxSubmissions: 1, distinctNumbers: RECIPIENTS })
    expect((await second.get('/v1/account', { token: key })).body.balance).toBe(CREDITS - RECIPIENTS)
  }, 300_000)
})
