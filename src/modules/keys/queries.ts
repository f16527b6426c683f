import type { Kysely, Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import { prepareQuery } from '../../platform/db/prepared.js'
import type { ApiKeysTable, DB } from '../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertKey(db: Handle, key: ApiKeysTable): Promise<void> {
  await db.insertInto('api_keys').values(key).execute()
}

// Runs on every request whose key is not in the node's cache: compiled once.
const activeKeyByHash = prepareQuery(1, (db, keyHash: string) =>
  db.selectFrom('api_keys').select(['id', 'account_id', 'permission']).where('key_hash', '=', keyHash).where('revoked_at', 'is', null),
)

export async function findActiveKeyByHash(db: Kysely<DB>, keyHash: string) {
  return (await activeKeyByHash(db, keyHash))[0]
}

/**
 * Holds the account row's lock until the transaction ends, so that transactions taking
 * it for one account run one after another. Without row locks there is nothing to take:
 * SQLite runs one transaction at a time on its one connection, which serialises as well.
 * NO KEY UPDATE is FOR UPDATE minus blocking foreign-key checks: rows inserted elsewhere
 * for the account (contacts, events) do not wait for it. The accounts module owns the
 * row; this only reads it.
 */
export async function lockAccount(trx: Transaction<DB>, dialect: Dialect, accountId: string): Promise<void> {
  if (!dialect.rowLocks) return
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().executeTakeFirst()
}

export async function countActiveKeys(db: Handle, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export function listActiveKeys(db: Handle, accountId: string, limit: number, offset: number) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'prefix', 'permission', 'created_at', 'last_used_at'])
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute()
}

/**
 * The account filter is part of the UPDATE: a foreign id and an unknown id are the same
 * miss (undefined). Answers the revoked key's hash, by which caches know it.
 */
export async function revokeKey(db: Handle, accountId: string, keyId: string, at: string): Promise<string | undefined> {
  const row = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .returning('key_hash')
    .executeTakeFirst()
  return row?.key_hash
}

/** Moves lastUsedAt forward only, so nodes flushing out of order never move it back. */
export async function touchKey(db: Handle, keyId: string, usedAt: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: usedAt })
    .where('id', '=', keyId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', usedAt)]))
    .execute()
}
