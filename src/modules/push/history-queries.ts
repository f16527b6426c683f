import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'

/** Every SQL statement of the push history (embedded mode). */

export interface HistoryRow {
  id: number
  channel: string
  event: string
  data: string
}

export interface NewEvent {
  accountId: string
  channel: string
  event: string
  data: string
  publishedAt: string
}

/**
 * Appends the events in the order given and returns their ids, in that order: one
 * statement when there is one event, else one transaction of single-row inserts (each
 * returns its own id, so no id is ever matched to the wrong event). On SQLite the commit,
 * not the insert, is most of the cost, so a batch costs about what one event does.
 */
export async function insertEvents(db: Kysely<DB>, events: readonly NewEvent[]): Promise<number[]> {
  if (events.length === 1) return [await insertEvent(db, events[0]!)]
  return db.transaction().execute(async (trx) => {
    const ids: number[] = []
    for (const event of events) ids.push(await insertEvent(trx, event))
    return ids
  })
}

async function insertEvent(db: Kysely<DB>, row: NewEvent): Promise<number> {
  const inserted = await db
    .insertInto('push_events')
    .values({ account_id: row.accountId, channel: row.channel, event: row.event, data: row.data, published_at: row.publishedAt })
    .returning('id')
    .executeTakeFirstOrThrow()
  return Number(inserted.id)
}

/** Kept events of the account on these channels with an id above `afterId`, in id order. */
export async function listEventsAfter(db: Kysely<DB>, accountId: string, channels: readonly string[], afterId: number): Promise<HistoryRow[]> {
  const rows = await db
    .selectFrom('push_events')
    .select(['id', 'channel', 'event', 'data'])
    .where('account_id', '=', accountId)
    .where('channel', 'in', channels)
    .where('id', '>', afterId)
    .orderBy('id')
    .execute()
  return rows.map((row) => ({ ...row, id: Number(row.id) }))
}

/** The newest id trimmed from any of these channels, 0 when none was. */
export async function findTrimmedThrough(db: Kysely<DB>, accountId: string, channels: readonly string[]): Promise<number> {
  const row = await db
    .selectFrom('push_history_trims')
    .select((eb) => eb.fn.max('trimmed_through').as('through'))
    .where('account_id', '=', accountId)
    .where('channel', 'in', channels)
    .executeTakeFirst()
  return Number(row?.through ?? 0)
}

/** The newest id ever issued (trimmed or not), 0 before the first publish. */
export async function findLastIssuedId(db: Kysely<DB>, dialect: Dialect): Promise<number> {
  const { rows } = await sql<{ last: number | string | null }>`select ${dialect.lastIssuedId('push_events')} as last`.execute(db)
  return Number(rows[0]?.last ?? 0)
}

/** Events the channel holds, counted up to `upTo` at most (a bounded index range). */
export async function countChannelEvents(db: Kysely<DB>, accountId: string, channel: string, upTo: number): Promise<number> {
  const row = await db
    .selectFrom((eb) => eb.selectFrom('push_events').select('id').where('account_id', '=', accountId).where('channel', '=', channel).limit(upTo).as('kept'))
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

/**
 * The id of the newest event to trim so that the channel keeps `keep` events, and of the
 * newest one within the oldest `batch` of those, so one delete stays short. Undefined when
 * the channel holds no more than `keep`.
 */
export async function findSizeTrimBound(db: Kysely<DB>, accountId: string, channel: string, keep: number, batch: number): Promise<number | undefined> {
  const cutoff = await db
    .selectFrom('push_events')
    .select('id')
    .where('account_id', '=', accountId)
    .where('channel', '=', channel)
    .orderBy('id', 'desc')
    .limit(1)
    .offset(keep)
    .executeTakeFirst()
  if (cutoff === undefined) return undefined
  const batchEnd = await db
    .selectFrom('push_events')
    .select('id')
    .where('account_id', '=', accountId)
    .where('channel', '=', channel)
    .where('id', '<=', cutoff.id)
    .orderBy('id')
    .limit(1)
    .offset(batch - 1)
    .executeTakeFirst()
  return Number((batchEnd ?? cutoff).id)
}

/** Deletes the channel's events up to `throughId` and records the trim, in one transaction. */
export async function trimChannelThrough(db: Kysely<DB>, accountId: string, channel: string, throughId: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('push_events').where('account_id', '=', accountId).where('channel', '=', channel).where('id', '<=', throughId).execute()
    await recordTrims(trx, [{ accountId, channel, throughId }])
  })
}

/** The oldest `limit` events, oldest first: trimming by age takes the expired prefix. */
export async function listOldestEvents(db: Kysely<DB>, limit: number): Promise<{ id: number; accountId: string; channel: string; publishedAt: string }[]> {
  const rows = await db.selectFrom('push_events').select(['id', 'account_id', 'channel', 'published_at']).orderBy('id').limit(limit).execute()
  return rows.map((row) => ({ id: Number(row.id), accountId: row.account_id, channel: row.channel, publishedAt: row.published_at }))
}

/** Deletes these events and records, per channel, the newest id trimmed, in one transaction. */
export async function trimEvents(db: Kysely<DB>, ids: number[], trims: { accountId: string; channel: string; throughId: number }[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('push_events').where('id', 'in', ids).execute()
    await recordTrims(trx, trims)
  })
}

async function recordTrims(db: Kysely<DB>, trims: { accountId: string; channel: string; throughId: number }[]): Promise<void> {
  if (trims.length === 0) return
  await db
    .insertInto('push_history_trims')
    .values(trims.map((t) => ({ account_id: t.accountId, channel: t.channel, trimmed_through: t.throughId })))
    // Portable greatest(): a watermark never moves back.
    .onConflict((oc) =>
      oc.columns(['account_id', 'channel']).doUpdateSet({
        trimmed_through: sql<number>`case when excluded.trimmed_through > push_history_trims.trimmed_through then excluded.trimmed_through else push_history_trims.trimmed_through end`,
      }),
    )
    .execute()
}
