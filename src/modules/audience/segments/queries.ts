import { sql, type Compilable, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB, SegmentsTable } from '../../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertSegment(db: Handle, segment: Omit<SegmentsTable, 'count_version' | 'counted_version'>): Promise<void> {
  await db.insertInto('segments').values(segment).execute()
}

export function findSegment(db: Handle, accountId: string, segmentId: string) {
  return db.selectFrom('segments').selectAll().where('account_id', '=', accountId).where('id', '=', segmentId).executeTakeFirst()
}

function filteredSegments(db: Handle, dialect: Dialect, accountId: string, search: string | undefined) {
  let query = db.selectFrom('segments').where('account_id', '=', accountId)
  if (search) query = query.where(dialect.contains(sql.ref('segments.name'), search))
  return query
}

export async function countSegments(db: Handle, dialect: Dialect, accountId: string, search: string | undefined): Promise<number> {
  const row = await filteredSegments(db, dialect, accountId, search)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export function listSegments(db: Handle, dialect: Dialect, accountId: string, search: string | undefined, limit: number, offset: number) {
  return filteredSegments(db, dialect, accountId, search)
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute()
}

export async function replaceSegment(
  trx: Transaction<DB>,
  accountId: string,
  segmentId: string,
  changes: Pick<SegmentsTable, 'name' | 'description' | 'rules_operator' | 'rules' | 'updated_at'>,
): Promise<boolean> {
  // The old count describes the old rules: drop it so the next read counts afresh.
  const result = await trx
    .updateTable('segments')
    .set({
      ...changes,
      contact_count: null,
      count_version: sql`count_version + 1`,
      count_stale_since: changes.updated_at,
      count_touched_at: changes.updated_at,
    })
    .where('account_id', '=', accountId)
    .where('id', '=', segmentId)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

export async function deleteSegment(trx: Handle, accountId: string, segmentId: string): Promise<boolean> {
  const result = await trx.deleteFrom('segments').where('account_id', '=', accountId).where('id', '=', segmentId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/**
 * Marks every cached count of the account stale, in the transaction of the change that
 * moved it. `count_stale_since` keeps the first change since the last count, so a stream
 * of changes cannot postpone the refresh past the maximum staleness.
 */
export async function markCountsStale(trx: Transaction<DB>, accountId: string, at: string): Promise<void> {
  await trx
    .updateTable('segments')
    .set({
      count_version: sql`count_version + 1`,
      count_stale_since: sql`case when count_version = counted_version then ${at} else count_stale_since end`,
      count_touched_at: at,
    })
    .where('account_id', '=', accountId)
    .execute()
}

/** Stale counts due now: never counted, changes settled since `settledBefore`, or stale since before `overdueBefore`. */
export function findDueCounts(db: Handle, settledBefore: string, overdueBefore: string, limit: number) {
  return db
    .selectFrom('segments')
    .select(['id', 'account_id', 'rules_operator', 'rules', 'count_version'])
    .whereRef('count_version', '<>', 'counted_version')
    .where((eb) =>
      eb.or([
        eb('contact_count', 'is', null),
        eb('count_touched_at', '<', settledBefore),
        eb('count_stale_since', '<', overdueBefore),
      ]),
    )
    .orderBy('account_id')
    .limit(limit)
    .execute()
}

/** Stores a count only if no change arrived while it was being counted. */
export async function storeCount(db: Handle, segmentId: string, version: number, count: number, at: string): Promise<void> {
  await db
    .updateTable('segments')
    .set({ contact_count: count, counted_version: version, counted_at: at })
    .where('id', '=', segmentId)
    .where('count_version', '=', version)
    .execute()
}

// ---- audience evaluation ----

/**
 * Long reads go through `readLong` (store.readLong): on SQLite a reader thread, so a
 * count over a million contacts never stalls the requests around it.
 */
export interface LongReads {
  db: Kysely<DB>
  readLong<T>(query: Compilable<T>): Promise<T[]>
}

/** Count of matching contacts, split into those a broadcast would send to and opted-out ones. */
export async function countAudience({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>) {
  const [row] = await readLong(db
    .selectFrom('contacts')
    .select([
      sql<number>`coalesce(sum(case when contacts.opted_out = 0 then 1 else 0 end), 0)`.as('recipients'),
      sql<number>`coalesce(sum(contacts.opted_out), 0)`.as('opted_out'),
    ])
    .where('contacts.account_id', '=', accountId)
    .where(predicate))
  return { recipients: Number(row!.recipients), optedOut: Number(row!.opted_out) }
}

/** Just the recipients: the count a broadcast would send to now. */
export async function countRecipients({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>): Promise<number> {
  const [row] = await readLong(db
    .selectFrom('contacts')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0)
    .where(predicate))
  return Number(row!.count)
}

/** The recipients a predicate reaches and the sum of `perRecipient` over them, in one scan (a broadcast's count and price). */
export async function tallyRecipients({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>, perRecipient: RawBuilder<number>): Promise<{ count: number; total: number }> {
  const [row] = await readLong(db
    .selectFrom('contacts')
    .select((eb) => [eb.fn.countAll<number>().as('count'), sql<number>`coalesce(sum(${perRecipient}), 0)`.as('total')])
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0)
    .where(predicate))
  return { count: Number(row!.count), total: Number(row!.total) }
}

export function sampleRecipients({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>, limit: number) {
  return readLong(db
    .selectFrom('contacts')
    .selectAll()
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0)
    .where(predicate)
    .orderBy('contacts.created_at', 'desc')
    .orderBy('contacts.id', 'desc')
    .limit(limit))
}

/** Recipient counts of several predicates in one scan of the account's contacts. */
export async function countRecipientsForEach({ db, readLong }: LongReads, accountId: string, predicates: readonly RawBuilder<boolean>[]): Promise<number[]> {
  if (predicates.length === 0) return []
  const [row] = (await readLong(db
    .selectFrom('contacts')
    .select(predicates.map((p, i) => sql<number>`coalesce(sum(case when ${p} then 1 else 0 end), 0)`.as(`c${i}`)))
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0))) as Record<string, number>[]
  return predicates.map((_, i) => Number(row![`c${i}`]))
}
