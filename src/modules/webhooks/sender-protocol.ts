import type { DeliveryAgentOptions } from './ssrf.js'
import type { Attempt, AttemptResult } from './sender.js'

/** What the sender thread is started with. */
export type SenderThreadData = Pick<DeliveryAgentOptions, 'allowPrivateNetworks' | 'connections'> & {
  ca?: string
  /** Attempts in flight at once; later orders wait in the thread, in order, for a slot. */
  maxInFlight: number
}

/**
 * One attempt for the thread to send: `at` is the attempt's instant in milliseconds, as
 * the sender's clock read it when `handedAt` (Date.now()) was. An order that waits for a
 * slot starts as much later.
 */
export interface AttemptOrder extends Attempt {
  id: number
  at: number
  handedAt: number
  timeoutMs: number
}

export type SenderRequest =
  | { type: 'send'; orders: AttemptOrder[] }
  | { type: 'interrupt'; id: number; why: string }
  | { type: 'close' }

/** Each result with the instant its attempt started (`at` moved on by its wait), in milliseconds. */
export type SenderReply = { type: 'results'; results: { id: number; result: AttemptResult; startedAt: number }[] } | { type: 'closed' }
