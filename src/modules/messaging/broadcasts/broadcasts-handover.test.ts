/**
 * When a broadcast's recipients are handed over on the node that queues them: from the
 * first chunk by default (SQLite), once every chunk is written with handOverWhileQueueing
 * false (PostgreSQL's default). Seen through its message's counts, sampled while it is queued
 * in tiny chunks.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { draftBroadcastToList } from '../../../../test/support/campaign-fixtures.js'
import { TEST_ADMIN_TOKEN } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

const RECIPIENTS = 1_500

let server: TestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Sends a broadcast to RECIPIENTS contacts; answers the progress samples (recipients queued, sent) taken until all are sent. */
async function progressWhileQueued(target: TestServer): Promise<{ recipients: number; sent: number }[]> {
  const { key, broadcastId: broadcast } = await draftBroadcastToList(target, RECIPIENTS, 40_000)
  expect((await target.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
  const samples: { recipients: number; sent: number }[] = []
  const deadline = Date.now() + 60_000
  for (;;) {
    // The broadcast's message as listed: its recipients queued so far and those handed over, read together.
    const items = (await target.get('/v1/sms?pageSize=10', { token: key })).body.items as { broadcastId: string | null; recipientCount: number; sent: number }[]
    const message = items.find((m) => m.broadcastId === broadcast)
    if (message) samples.push({ recipients: message.recipientCount, sent: message.sent })
    if (message?.sent === RECIPIENTS || Date.now() > deadline) return samples
  }
}

describe("a broadcast's hand-over on the node queueing it", () => {
  it('waits for the last chunk with handOverWhileQueueing false', { timeout: 90_000 }, async () => {
    server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN }, broadcastQueue: { chunkSize: 3, maxChunkSize: 16, handOverWhileQueueing: false } })
    const samples = await progressWhileQueued(server)
    expect(samples.at(-1)!.sent).toBe(RECIPIENTS)
    expect(samples.filter((s) => s.recipients < RECIPIENTS).length, 'the broadcast was seen part-way through its queueing').toBeGreaterThan(0)
    expect(samples.filter((s) => s.sent > 0 && s.recipients < RECIPIENTS)).toEqual([])
  })

  it('starts with the first chunks by default', { timeout: 90_000 }, async () => {
    server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN }, broadcastQueue: { chunkSize: 3, maxChunkSize: 16 } })
    const samples = await progressWhileQueued(server)
    expect(samples.at(-1)!.sent).toBe(RECIPIENTS)
    expect(samples.filter((s) => s.sent > 0 && s.recipients < RECIPIENTS).length, 'recipients were handed over while later ones were queued').toBeGreaterThan(0)
  })
})
