import type { Kysely, Transaction } from 'kysely'
import type { ApiKeysTable, DB } from '../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertKey(db: Handle, key: ApiKeysTable): Promise<void> {
  await db.insertInto('api_keys').values(key).execute()
}

export function findActiveKeyByHash(db: Handle, keyHash: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'account_id', 'permission'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
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

/** The account filter is part of the UPDATE: a foreign id and an unknown id are the same miss. */
export async function revokeKey(db: Handle, accountId: string, keyId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
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
