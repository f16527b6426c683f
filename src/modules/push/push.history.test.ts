import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'
import type { StorePushBroker } from './store-broker.js'

// History of 3 events per channel, for 60 s; the clock only moves when told.
const clock = new ManualClock(new Date(Math.floor(Date.now() / 1000) * 1000))
let server: TestServer
let account: TestAccount & { key: string }
const readers: SseReader[] = []

/** Publishes and returns the SSE id, read from a stream that saw it live. */
async function publishAll(channel: string, count: number, from = 1): Promise<string[]> {
  const reader = await SseReader.open(pushStreamUrl(server, await issuePushToken(server, account.key, [channel])))
  readers.push(reader)
  await reader.waitForConnected()
  for (let n = from; n < from + count; n++) await publishPush(server, account.key, channel, 'e', { n })
  await reader.waitForEvents(count)
  reader.close()
  return reader.events.map((e) => e.id)
}

async function replay(channels: string[], lastEventId: string): Promise<{ recovered: boolean; ns: number[] }> {
  const reader = await SseReader.open(pushStreamUrl(server, await issuePushToken(server, account.key, channels)), { 'last-event-id': lastEventId })
  readers.push(reader)
  const recovered = JSON.parse((await reader.waitForConnected()).data).recovered as boolean
  // Replayed events follow connected at once; a live one would need a publish.
  await new Promise((resolve) => setTimeout(resolve, 150))
  return { recovered, ns: reader.events.map((e) => JSON.parse(e.data).n as number) }
}

const trim = () => (server.app.platform.push.broker as StorePushBroker).trimHistory()

beforeAll(async () => {
  server = await startServer({ clock, config: { pushHistorySize: 3, pushHistoryTtlS: 60 } })
  const a = await signUp(server)
  account = { ...a, key: await createKey(server, a, 'Full') }
})
afterAll(async () => {
  for (const reader of readers) reader.close()
  await server?.close()
})

describe('push history', () => {
  it('keeps PUSH_HISTORY_SIZE events per channel: an older id replays what is kept with recovered: false', async () => {
    const ids = await publishAll('sized', 5)
    await publishAll('untouched', 2)
    await trim()
    // Events 1 and 2 are gone: from event 1, event 2 was missed for good.
    expect(await replay(['sized'], ids[0]!)).toEqual({ recovered: false, ns: [3, 4, 5] })
    // From event 2 on, nothing missed was trimmed.
    expect(await replay(['sized'], ids[1]!)).toEqual({ recovered: true, ns: [3, 4, 5] })
    // One trimmed channel among several makes the replay incomplete; the others are whole.
    expect(await replay(['sized', 'untouched'], ids[0]!)).toEqual({ recovered: false, ns: [3, 4, 5, 1, 2] })
    expect(await replay(['untouched'], ids[0]!)).toEqual({ recovered: true, ns: [1, 2] })
  })

  it('checks a channel found with room for more again once publishes may have filled it', async () => {
    const ids = await publishAll('roomy', 2)
    // Two of three held: room for one more, and nothing to trim.
    await trim()
    await publishAll('roomy', 1, 3)
    await trim()
    const beforeFirst = String(Number(ids[0]) - 1)
    expect(await replay(['roomy'], beforeFirst)).toEqual({ recovered: true, ns: [1, 2, 3] })
    // The fourth is past the room counted at the check: the channel is checked and trimmed.
    await publishAll('roomy', 1, 4)
    await trim()
    expect(await replay(['roomy'], beforeFirst)).toEqual({ recovered: false, ns: [2, 3, 4] })
    expect(await replay(['roomy'], ids[0]!)).toEqual({ recovered: true, ns: [2, 3, 4] })
  })

  it('keeps events for PUSH_HISTORY_TTL_S: an id from before an expired event replays the rest with recovered: false', async () => {
    const [old] = await publishAll('aging', 1)
    clock.advance(30_000)
    const [middle] = await publishAll('aging', 1, 2)
    clock.advance(31_000)
    await publishAll('aging', 1, 3)
    await trim()
    expect(await replay(['aging'], String(Number(old) - 1))).toEqual({ recovered: false, ns: [2, 3] })
    expect(await replay(['aging'], old!)).toEqual({ recovered: true, ns: [2, 3] })
    clock.advance(30_000)
    await trim()
    expect(await replay(['aging'], old!)).toEqual({ recovered: false, ns: [3] })
    expect(await replay(['aging'], middle!)).toEqual({ recovered: true, ns: [3] })
  })

  it('never issues an id again once the newest events are trimmed', async () => {
    const [first] = await publishAll('reuse', 1)
    clock.advance(120_000)
    await trim()
    // Every event is gone; the next one still gets a new, higher id.
    expect(await replay(['reuse'], '0')).toEqual({ recovered: false, ns: [] })
    const [next] = await publishAll('reuse', 1, 2)
    expect(Number(next)).toBeGreaterThan(Number(first))
    expect(await replay(['reuse'], first!)).toEqual({ recovered: true, ns: [2] })
  })
})
