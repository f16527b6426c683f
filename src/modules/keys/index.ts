/** API keys: create, list, revoke, and verify a raw key on each request. */
export { keysRoutes } from './routes.js'
export { verifyApiKey, type KeysDeps } from './service.js'
/** Batches lastUsedAt writes; flush on shutdown. */
export { KeyUsageRecorder } from './usage.js'
/** Verified keys of this node; build one per app with the store's change signals. */
export { KeyCache } from './key-cache.js'
