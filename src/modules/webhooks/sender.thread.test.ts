import type { Worker } from 'node:worker_threads'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { SenderThread } from './sender-client.js'

let receiver: HttpsReceiver
let sender: SenderThread | undefined

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
})
afterAll(() => receiver.close())
afterEach(async () => {
  await sender?.close()
  sender = undefined
})

function start(maxInFlight: number): SenderThread {
  sender = new SenderThread({ allowPrivateNetworks: true, connections: 4, maxInFlight, ca: receiver.ca.caPem }, pino({ level: 'silent' }))
  return sender
}

const attempt = (path: string) => ({ endpoint: receiver.url(path), eventId: `evt_${path}`, body: '{"event":"Test"}', secrets: ['whsec_' + Buffer.alloc(32, 7).toString('base64')] })

describe('the sender thread', () => {
  it('has at most maxInFlight attempts out at once, and starts the next, at its own instant, as one ends', async () => {
    receiver.answer('/slow', { status: 200, delayMs: 300 })
    const thread = start(1)
    const at = new Date()
    const first = thread.send(attempt('/slow'), at, 5000)
    const second = thread.send(attempt('/slow'), at, 5000)
    await receiver.waitFor('/slow', 1)
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(receiver.to('/slow')).toHaveLength(1)
    expect((await first.result).success).toBe(true)
    expect((await second.result).success).toBe(true)
    expect(receiver.to('/slow')).toHaveLength(2)
    // The second started when the first's slot freed: its instant (deliveredAt, signature) says so.
    expect(first.startedAt.getTime()).toBeGreaterThanOrEqual(at.getTime())
    expect(second.startedAt.getTime() - first.startedAt.getTime()).toBeGreaterThanOrEqual(250)
  })

  it('ends an attempt interrupted while it waits for a slot at once, without sending it', async () => {
    receiver.answer('/hang', { hang: true })
    const thread = start(1)
    const sent = thread.send(attempt('/hang'), new Date(), 60_000)
    const waiting = thread.send(attempt('/never'), new Date(), 60_000)
    await receiver.waitFor('/hang', 1)
    waiting.interrupt('lease lost')
    expect(await waiting.result).toMatchObject({ statusCode: 0, success: false, error: 'lease lost' })
    expect(waiting.interruptedBy).toBe('lease lost')
    sent.interrupt('shutting down')
    expect(await sent.result).toMatchObject({ statusCode: 0, success: false })
    expect(receiver.to('/never')).toHaveLength(0)
  })

  it('when the thread dies, ends its attempts as failed, and the next attempt starts a new thread', async () => {
    receiver.answer('/stuck', { hang: true })
    const thread = start(4)
    const lost = thread.send(attempt('/stuck'), new Date(), 60_000)
    await receiver.waitFor('/stuck', 1)
    // What a crash of the thread looks like from outside: it exits.
    await (thread as unknown as { worker: Worker }).worker.terminate()
    expect(await lost.result).toMatchObject({ statusCode: 0, success: false, error: 'the sender thread stopped' })
    expect((await thread.send(attempt('/after'), new Date(), 5000).result).success).toBe(true)
  })
})
