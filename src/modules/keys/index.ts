/** API keys: create, list, revoke, and verify a raw key on each request. */
export { createKeys, type KeysModule, type KeysOptions } from './keys.js'
