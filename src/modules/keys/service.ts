import type { Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { ChangeSignals } from '../../platform/db/change-signals.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import { offsetOf, toPage, type Page, type PageRequest } from '../../platform/http/pagination.js'
import type { Permission } from '../../platform/http/principal.js'
import { newId } from '../../platform/ids.js'
import { Conflict, NotFound } from '../../platform/problems.js'
import { KEY_REVOKED_CHANNEL, type KeyCache, type KeyPrincipal } from './key-cache.js'
import { generateKey, hashKey, PREFIX_LENGTH } from './key-material.js'
import * as queries from './queries.js'
import type { ApiKey, CreateKeyBody } from './schemas.js'
import type { KeyUsageRecorder } from './usage.js'

export interface KeysDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
  usage: KeyUsageRecorder
  cache: KeyCache
  signals: ChangeSignals
}

/** Guards against runaway scripts; far above what a team uses. */
export const MAX_ACTIVE_KEYS = 200

export async function createKey(deps: KeysDeps, accountId: string, input: CreateKeyBody): Promise<string> {
  const permission: Permission = input.permission ?? 'Full'
  const rawKey = generateKey(permission)
  await deps.db.transaction().execute(async (trx) => {
    // Counted and inserted in one transaction that holds the account's lock, so creations
    // for one account take turns and each count sees the keys of those before it:
    // otherwise two concurrent creations at 199 keys would both count 199 and insert.
    await queries.lockAccount(trx, deps.dialect, accountId)
    if ((await queries.countActiveKeys(trx, accountId)) >= MAX_ACTIVE_KEYS) {
      throw new Conflict(`An account may hold at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`)
    }
    await queries.insertKey(trx, {
      id: newId(),
      account_id: accountId,
      name: input.name?.trim() || null,
      prefix: rawKey.slice(0, PREFIX_LENGTH),
      key_hash: hashKey(rawKey),
      permission,
      created_at: deps.clock.now().toISOString(),
      last_used_at: null,
      revoked_at: null,
    })
  })
  return rawKey
}

export async function listKeys(deps: KeysDeps, accountId: string, page: PageRequest): Promise<Page<ApiKey>> {
  const [totalCount, rows] = await Promise.all([
    queries.countActiveKeys(deps.db, accountId),
    queries.listActiveKeys(deps.db, accountId, page.pageSize, offsetOf(page)),
  ])
  const items = rows.map((row) => ({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    permission: row.permission,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }))
  return toPage(items, totalCount, page)
}

/**
 * A revoked key fails on the very next request: this node forgets it before answering,
 * and the other nodes hear of it from the announcement, which PostgreSQL delivers when
 * the UPDATE commits.
 */
export async function revokeKey(deps: KeysDeps, accountId: string, keyId: string): Promise<void> {
  const keyHash = await deps.db.transaction().execute(async (trx) => {
    const revoked = await queries.revokeKey(trx, accountId, keyId, deps.clock.now().toISOString())
    if (revoked === undefined) throw new NotFound('API key', keyId)
    await deps.signals.announce(trx, KEY_REVOKED_CHANNEL, revoked)
    return revoked
  })
  deps.cache.evict(keyHash)
}

/**
 * The caller a raw key stands for, or null when it is unknown or revoked. Known keys come
 * from the node's cache (see KeyCache for why a revoked one never does).
 */
export async function verifyApiKey(deps: KeysDeps, rawKey: string): Promise<KeyPrincipal | null> {
  const keyHash = hashKey(rawKey)
  const nowMs = deps.clock.now().getTime()
  let { key, ticket } = await deps.cache.find(keyHash, nowMs)
  if (key === undefined) {
    const row = await queries.findActiveKeyByHash(deps.db, keyHash)
    if (!row) return null
    key = { kind: 'apiKey', accountId: row.account_id, keyId: row.id, permission: row.permission }
    deps.cache.remember(keyHash, key, ticket, nowMs)
  }
  deps.usage.record(key.keyId, nowMs)
  return key
}
