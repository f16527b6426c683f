import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { SseReader } from '../../../test/support/sse.js'
import type { PushEvent } from './broker.js'
import { chunkOf, encodeConnected, encodeEvent, PushStream } from './stream.js'

// The race these guard against: the store answers a reconnecting client's replay before
// the publisher's own write returns, so the client gets an event by replay (or had it
// already) and the publisher's fan-out then hands the same event to its new stream live.
const ids = { compareIds: (a: string, b: string) => Math.sign(Number(a) - Number(b)) }
const owner = { streamClosed() {}, slowConsumerDropped() {} }
const event = (id: number): PushEvent => ({ id: String(id), channel: 'c', event: 'tick', data: JSON.stringify({ n: id }) })

let server: Server | undefined
afterEach(async () => {
  // A stream never ends by itself: its connection is closed for the server to close.
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

/** A real HTTP server whose one stream goes live as given, then is handed `live` batches as fan-outs. */
async function streamOf(goLive: (stream: PushStream) => Promise<void>, live: PushEvent[][]): Promise<SseReader> {
  server = createServer(async (_request, response) => {
    const stream = new PushStream(response, owner, 'account', ['c'], Math.floor(Date.now() / 1000) + 60)
    stream.begin({ 'content-type': 'text/event-stream' })
    await goLive(stream)
    for (const batch of live) {
      const frame = Buffer.concat(batch.map(encodeEvent))
      stream.send(batch, frame, chunkOf(frame))
    }
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()))
  const reader = await SseReader.open(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/`)
  return reader
}

describe('a live stream never repeats what its client has', () => {
  it('drops a fan-out of the event the client resumed from, and sends what follows', async () => {
    const reader = await streamOf((stream) => stream.goLive(encodeConnected(['c'], true), [], ids, '44'), [[event(44)], [event(45)]])
    await reader.waitForEvents(1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(reader.events.map((m) => m.id)).toEqual(['45'])
  })

  it('drops a fan-out of an event it replayed, keeping the newer ones of the same batch', async () => {
    const reader = await streamOf((stream) => stream.goLive(encodeConnected(['c'], true), [event(43), event(44)], ids, '42'), [[event(44), event(45)], [event(46)]])
    await reader.waitForEvents(4)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(reader.events.map((m) => m.id)).toEqual(['43', '44', '45', '46'])
  })

  it('sends every live event on a first connection', async () => {
    const reader = await streamOf((stream) => stream.goLive(encodeConnected(['c'], true), [], ids), [[event(1)], [event(2), event(3)]])
    await reader.waitForEvents(3)
    expect(reader.events.map((m) => m.id)).toEqual(['1', '2', '3'])
  })
})
