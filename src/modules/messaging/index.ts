/** Messaging: SMS sending, pricing, carriers, the dispatcher, receipts, inbound and opt-out, broadcasts. */
export { createMessaging, Messaging, type MessagingOptions } from './messaging.js'
export { DEFAULT_BROADCAST_QUEUE, type BroadcastQueueOptions } from './broadcasts/queue.js'
// What a message is charged: the benchmarks count it independently of the server.
export { analyzeSms } from './encoding.js'
