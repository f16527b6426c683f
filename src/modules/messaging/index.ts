/** Messaging: SMS sending, pricing, carriers, the dispatcher, receipts, inbound and opt-out, broadcasts. */
export { Messaging, type MessagingOptions } from './messaging.js'
