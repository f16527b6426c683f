/** Push: tokens, Server-Sent Event streams, publish, history and replay. */
export { Push, type PushOptions } from './push.js'
/** The seam between streams and where events live; one implementation per mode. */
export type { PushBroker } from './broker.js'
/** Embedded mode's broker: history in the store, fan-out in this process. */
export { StorePushBroker } from './store-broker.js'
/** Cluster mode's broker: history in Redis Streams, fan-out to every node through Redis. */
export { RedisPushBroker } from './redis-broker.js'
