/**
 * How many dispatch batches a node has in flight at once (DISPATCH_CONCURRENCY unset):
 * with simulators alone a batch waits on nothing but the store, and PostgreSQL hands them
 * over one at a time (SQLite two); with a carrier outside, whose answers batches wait for,
 * several overlap (PostgreSQL four, SQLite two). Seen from the store: the recipients held
 * by a claim at any moment, sampled on a connection of the test's own.
 */
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { draftBroadcastToList } from '../../../../test/support/campaign-fixtures.js'
import { TEST_ADMIN_TOKEN } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import type { DatabaseConfig } from '../../../platform/config.js'
import SQLite from '../../../platform/db/sqlite-binding.js'

const BATCH = 50
const RECIPIENTS = 2_000
const CREDENTIALS = { systemId: 'platform', password: 'secret1' }

let server: TestServer | undefined
let smsc: TestSmsc | undefined
afterEach(async () => {
  await server?.close()
  await smsc?.stop()
  server = smsc = undefined
})

/** Counts the recipients held by a claim, as often as the store answers, until stopped; answers the most seen. */
function sampleHeld(database: DatabaseConfig): { stop: () => Promise<number> } {
  const query = `select count(*) as n from message_recipients where status = 'queued' and lease_owner is not null`
  let most = 0
  let running = true
  const sampling = (async () => {
    if (database.kind === 'sqlite') {
      const db = new SQLite(database.path, { readonly: true })
      const count = db.prepare(query).pluck()
      try {
        while (running) {
          most = Math.max(most, Number(count.get()))
          await new Promise((resolve) => setTimeout(resolve, 1))
        }
      } finally {
        db.close()
      }
      return
    }
    const client = new pg.Client({ connectionString: database.url, options: `-c search_path=${database.schema}` })
    await client.connect()
    try {
      while (running) most = Math.max(most, Number((await client.query(query)).rows[0].n))
    } finally {
      await client.end()
    }
  })()
  return {
    stop: async () => {
      running = false
      await sampling
      return most
    },
  }
}

/** Sends a broadcast to RECIPIENTS contacts and answers the most recipients seen held at once while it was handed over. */
async function mostHeldDuringBroadcast(target: TestServer): Promise<number> {
  const { key, broadcastId: broadcast } = await draftBroadcastToList(target, RECIPIENTS, 30_000)
  const sampler = sampleHeld(target.config.database)
  expect((await target.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
  await expect.poll(async () => (await target.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 60_000, interval: 50 }).toBe(RECIPIENTS)
  return sampler.stop()
}

describe('dispatch batches in flight at once', () => {
  it('with simulators alone: one on PostgreSQL, two on SQLite', { timeout: 90_000 }, async () => {
    server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, dispatchBatchSize: BATCH } })
    const loops = server.config.database.kind === 'postgres' ? 1 : 2
    const most = await mostHeldDuringBroadcast(server)
    expect(most, 'a batch was seen in flight').toBeGreaterThan(0)
    expect(most, `at most ${loops} batch(es) of ${BATCH} held at once`).toBeLessThanOrEqual(loops * BATCH)
  })

  it('with an SMPP carrier, whose answers batches wait for: several overlap', { timeout: 90_000 }, async () => {
    smsc = await TestSmsc.start(CREDENTIALS)
    // 1,000 parts a second: a batch of 50 waits about 50 ms for its answers.
    server = await startServer({ config: { carrier: 'smpp', smppUrl: smsc.url(), smppWindow: 10, smppMaxPerSecond: 1_000, adminToken: TEST_ADMIN_TOKEN, dispatchBatchSize: BATCH } })
    const most = await mostHeldDuringBroadcast(server)
    expect(most, `more than one batch of ${BATCH} held at once`).toBeGreaterThan(BATCH)
  })
})
