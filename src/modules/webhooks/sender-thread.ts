import { parentPort, workerData } from 'node:worker_threads'
import type { AttemptOrder, SenderReply, SenderRequest, SenderThreadData } from './sender-protocol.js'
import { noAnswer, SentAttempt, type AttemptResult } from './sender.js'
import { createDeliveryAgent } from './ssrf.js'

/**
 * The worker's attempts are sent from this thread: signing, TLS and HTTP cost more than
 * everything else an attempt does, and here they leave the event loop that serves
 * requests, and the store's work on it, alone. Orders come in batches and wait here for
 * one of `maxInFlight` slots, so a slot that frees is taken at once, whatever the other
 * thread is doing; results go back in batches, once per turn of this thread's event loop.
 */

const port = parentPort!
const options = workerData as SenderThreadData
const agent = createDeliveryAgent(options)
const sending = new Map<number, SentAttempt>()
/** Orders waiting for a slot, oldest first, by id. */
const waiting = new Map<number, AttemptOrder>()
let results: { id: number; result: AttemptResult; startedAt: number }[] = []

function post(reply: SenderReply): void {
  port.postMessage(reply)
}

function flush(): void {
  const batch = results
  results = []
  post({ type: 'results', results: batch })
}

function reply(id: number, result: AttemptResult, startedAt: number): void {
  if (results.length === 0) setImmediate(flush)
  results.push({ id, result, startedAt })
}

/** The order's instant, moved on by the time it waited here. */
function startOf(order: AttemptOrder): number {
  return order.at + Math.max(0, Date.now() - order.handedAt)
}

/** Starts waiting orders while slots are free. */
function pump(): void {
  for (const [id, order] of waiting) {
    if (sending.size >= options.maxInFlight) return
    waiting.delete(id)
    const startedAt = startOf(order)
    const sent = new SentAttempt(agent, order, new Date(startedAt), order.timeoutMs)
    sending.set(id, sent)
    void sent.result.then((result) => {
      sending.delete(id)
      reply(id, result, startedAt)
      pump()
    })
  }
}

function interrupt(id: number, why: string): void {
  const order = waiting.get(id)
  if (order === undefined) return sending.get(id)?.interrupt(why)
  // Never started: it ends without an answer, as an attempt cut short before one came.
  waiting.delete(id)
  reply(id, noAnswer(why), startOf(order))
}

port.on('message', (request: SenderRequest) => {
  if (request.type === 'send') {
    for (const order of request.orders) waiting.set(order.id, order)
    pump()
  } else if (request.type === 'interrupt') interrupt(request.id, request.why)
  else void agent.close().finally(() => post({ type: 'closed' }))
})
