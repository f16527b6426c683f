import { parentPort, workerData } from 'node:worker_threads'
import type { AttemptOrder, SenderReply, SenderRequest, SenderThreadData } from './sender-protocol.js'
import { SentAttempt, type AttemptResult } from './sender.js'
import { createDeliveryAgent } from './ssrf.js'

/**
 * The worker's attempts are sent from this thread: signing, TLS and HTTP cost more than
 * everything else an attempt does, and here they leave the event loop that serves
 * requests, and the store's work on it, alone. Orders come in batches; results go back
 * in batches, once per turn of this thread's event loop.
 */

const port = parentPort!
const options = workerData as SenderThreadData
const agent = createDeliveryAgent(options)
const sending = new Map<number, SentAttempt>()
let results: { id: number; result: AttemptResult }[] = []

function post(reply: SenderReply): void {
  port.postMessage(reply)
}

function flush(): void {
  const batch = results
  results = []
  post({ type: 'results', results: batch })
}

function send(order: AttemptOrder): void {
  const sent = new SentAttempt(agent, order, new Date(order.at), order.timeoutMs)
  sending.set(order.id, sent)
  void sent.result.then((result) => {
    sending.delete(order.id)
    if (results.length === 0) setImmediate(flush)
    results.push({ id: order.id, result })
  })
}

port.on('message', (request: SenderRequest) => {
  if (request.type === 'send') for (const order of request.orders) send(order)
  else if (request.type === 'interrupt') sending.get(request.id)?.interrupt(request.why)
  else void agent.close().finally(() => post({ type: 'closed' }))
})
