import { createHash } from 'node:crypto'
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { DB } from '../../../platform/db/schema.js'
import { Conflict, ValidationFailed } from '../../../platform/problems.js'

export const KEPT_MS = 24 * 3_600_000
/**
 * A first request still marked in flight after this long died with its process: its
 * transaction never committed, so the key is free again.
 */
const ABANDONED_MS = 60_000

export type Replay = { status: number; body: unknown }

/** Digest of the request body: the same key with another body is a client error. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(JSON.stringify(body)).digest('base64url')
}

/**
 * Reserves a key for a first request, or answers what its first use answered. The
 * reservation commits on its own, so a concurrent repeat sees it and gets 409 instead of
 * waiting; the response is stored by complete() inside the send's own transaction, so a
 * key is marked done exactly when the send committed.
 */
export async function reserve(db: Kysely<DB>, accountId: string, key: string, hash: string, now: Date): Promise<Replay | undefined> {
  const at = now.toISOString()
  const inserted = await db
    .insertInto('idempotency_keys')
    .values({ account_id: accountId, key, request_hash: hash, response_status: null, response_body: null, created_at: at, expires_at: new Date(now.getTime() + KEPT_MS).toISOString() })
    .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
    .executeTakeFirst()
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return undefined

  const existing = await db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId).where('key', '=', key).executeTakeFirst()
  if (!existing) return reserve(db, accountId, key, hash, now)
  if (existing.expires_at <= at || (existing.response_status === null && Date.parse(existing.created_at) < now.getTime() - ABANDONED_MS)) {
    // Expired, or its first request died: take the key over for this request.
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ request_hash: hash, response_status: null, response_body: null, created_at: at, expires_at: new Date(now.getTime() + KEPT_MS).toISOString() })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('created_at', '=', existing.created_at)
      .executeTakeFirst()
    if (Number(taken.numUpdatedRows) > 0) return undefined
    return reserve(db, accountId, key, hash, now)
  }
  if (existing.request_hash !== hash) {
    throw ValidationFailed.field('Idempotency-Key', 'was already used with a different request body; use a new key for a new request')
  }
  if (existing.response_status === null) throw new Conflict('A request with this Idempotency-Key is still being processed; retry shortly')
  return { status: existing.response_status, body: JSON.parse(existing.response_body ?? 'null') }
}

/** Stores the response with the send, in its transaction. */
export async function complete(trx: Transaction<DB>, accountId: string, key: string, replay: Replay): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({ response_status: replay.status, response_body: JSON.stringify(replay.body) })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute()
}

/** complete() as a write of debitWith's one statement (PostgreSQL): only when the debit took place. */
export function completeWrite(accountId: string, key: string, replay: Replay): RawBuilder<unknown> {
  return sql`update idempotency_keys set response_status = ${replay.status}, response_body = ${JSON.stringify(replay.body)}
    where account_id = ${accountId} and key = ${key} and exists (select from debit)`
}

/** Frees the key when the first request failed, so that a retry (after a top-up, say) can succeed. */
export async function forget(db: Kysely<DB>, accountId: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('response_status', 'is', null).execute()
}

export async function purgeExpired(db: Kysely<DB>, now: Date): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<', now.toISOString()).execute()
}
