/** Push: tokens, Server-Sent Event streams, publish, history and replay. */
export { createPush, Push, type PushModuleOptions, type PushOptions } from './push.js'
export type { BusyProbe } from './coalescing.js'
/** The seam between streams and where events live: the store's (embedded) or Redis's (cluster). */
export type { PushBroker } from './broker.js'
