import { sql, type Compilable, type CompiledQuery, type Insertable, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB, MessageErrorStatsTable, MessageStatsTable } from '../../../platform/db/schema.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'

type Handle = Kysely<DB> | Transaction<DB>

export type StatsRow = Required<Insertable<MessageStatsTable>>
export type ErrorStatsRow = Insertable<MessageErrorStatsTable>

const STATS_KEY = ['account_id', 'bucket', 'broadcast_id', 'carrier'] as const
const STATS_COLUMNS = [...STATS_KEY, 'queued', 'sent', 'delivered', 'failed', 'credits'] as const
/** Upserts of up to this many rows are compiled once per store kind (see addToStats). */
const MOST_ROWS_COMPILED = 8
const compiledUpserts = new WeakMap<object, ({ query: CompiledQuery; slots: number[] } | undefined)[]>()

function upsertStats(trx: Transaction<DB>, rows: readonly StatsRow[]) {
  return trx
    .insertInto('message_stats')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(STATS_KEY).doUpdateSet((eb) => ({
        queued: eb('message_stats.queued', '+', eb.ref('excluded.queued')),
        sent: eb('message_stats.sent', '+', eb.ref('excluded.sent')),
        delivered: eb('message_stats.delivered', '+', eb.ref('excluded.delivered')),
        failed: eb('message_stats.failed', '+', eb.ref('excluded.failed')),
        credits: eb('message_stats.credits', '+', eb.ref('excluded.credits')),
      })),
    )
}

/**
 * Adds the rows to the rollups, in the caller's transaction: one statement however many
 * rows. Nearly every transaction adds one to a few rows, and building and compiling the
 * statement cost more than running it on SQLite: its text is compiled once per row count
 * and store kind, then run with the rows' values. Written ahead (writeAhead), as is the
 * errors' rollup below: nobody reads their answers.
 */
export async function addToStats(trx: Transaction<DB>, rows: readonly StatsRow[]): Promise<void> {
  if (rows.length > MOST_ROWS_COMPILED) {
    await writeAhead(trx, upsertStats(trx, rows))
    return
  }
  const adapter = trx.getExecutor().adapter
  let compiled = compiledUpserts.get(adapter)
  if (compiled === undefined) compiledUpserts.set(adapter, (compiled = []))
  let upsert = compiled[rows.length]
  if (upsert === undefined) compiled[rows.length] = upsert = compileUpsert(trx, rows.length)
  const values = rows.flatMap((row) => STATS_COLUMNS.map((column) => row[column]))
  await writeAhead(trx, { ...upsert.query, parameters: upsert.slots.map((slot) => values[slot]) })
}

/** The upsert of `count` rows, built with a marker for each value: `slots` says which value each parameter is. */
function compileUpsert(trx: Transaction<DB>, count: number): { query: CompiledQuery; slots: number[] } {
  const markers = Array.from({ length: count * STATS_COLUMNS.length }, () => ({}))
  const rows = Array.from({ length: count }, (_, r) => Object.fromEntries(STATS_COLUMNS.map((column, c) => [column, markers[r * STATS_COLUMNS.length + c]])) as unknown as StatsRow)
  const query = upsertStats(trx, rows).compile()
  const slots = query.parameters.map((parameter) => markers.indexOf(parameter as object))
  if (slots.some((slot) => slot < 0) || new Set(slots).size !== markers.length) throw new Error('the rollup upsert does not bind each value once')
  return { query, slots }
}

/** The example and the time of the newest failure win. */
export async function addToErrorStats(trx: Transaction<DB>, rows: readonly ErrorStatsRow[]): Promise<void> {
  await writeAhead(
    trx,
    trx
      .insertInto('message_error_stats')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['account_id', 'bucket', 'error']).doUpdateSet((eb) => ({
          count: eb('message_error_stats.count', '+', eb.ref('excluded.count')),
          example_recipient: sql<string>`case when excluded.last_at >= message_error_stats.last_at then excluded.example_recipient else message_error_stats.example_recipient end`,
          last_at: sql<string>`case when excluded.last_at > message_error_stats.last_at then excluded.last_at else message_error_stats.last_at end`,
        })),
      )
  )
}

/**
 * addToStats as a member of debitWith's one statement (PostgreSQL): it selects from the
 * statement's `debit`, so nothing is added when the balance is short. Cast, as PostgreSQL
 * types a VALUES list of bare parameters as text.
 */
export function addToStatsWithDebit(rows: readonly StatsRow[]): RawBuilder<unknown> {
  const values = rows.map(
    (r) =>
      sql`(cast(${r.account_id} as text), cast(${r.bucket} as text), cast(${r.broadcast_id} as text), cast(${r.carrier} as text),
        cast(${r.queued} as bigint), cast(${r.sent} as bigint), cast(${r.delivered} as bigint), cast(${r.failed} as bigint), cast(${r.credits} as bigint))`,
  )
  return sql`insert into message_stats (account_id, bucket, broadcast_id, carrier, queued, sent, delivered, failed, credits)
    select v.* from debit, (values ${sql.join(values)}) as v
    on conflict (account_id, bucket, broadcast_id, carrier) do update set queued = message_stats.queued + excluded.queued,
      sent = message_stats.sent + excluded.sent, delivered = message_stats.delivered + excluded.delivered,
      failed = message_stats.failed + excluded.failed, credits = message_stats.credits + excluded.credits`
}

export interface StatsFilter {
  accountId: string
  broadcastId?: string
  carrier?: string
}

/** The five sums of an interval as sumStatsByInterval gives them: 'queued,sent,delivered,failed,credits', null when it has no rows. */
export type PackedSums = string | null

/**
 * The rollups summed per interval (each [start, end), ISO), in the intervals' order: per
 * interval one range of the primary key, read by a correlated subquery, so the store
 * neither sorts the rows nor returns more than one row per interval (a 90-day series is
 * some 40,000 rows summed into 90). A scalar subquery gives one value: the five sums
 * travel as one text.
 */
export function sumStatsByInterval(db: Handle, dialect: Dialect, filter: StatsFilter, intervals: readonly (readonly [string, string])[]): Compilable<{ start: string; sums: PackedSums }> {
  const conditions = [sql`s.account_id = ${filter.accountId}`, sql`s.bucket >= i.column1`, sql`s.bucket < i.column2`]
  if (filter.broadcastId !== undefined) conditions.push(sql`s.broadcast_id = ${filter.broadcastId}`)
  if (filter.carrier !== undefined) conditions.push(sql`s.carrier = ${filter.carrier}`)
  const query = sql<{ start: string; sums: PackedSums }>`
    select i.column1 as start, (
      select sum(s.queued) || ',' || sum(s.sent) || ',' || sum(s.delivered) || ',' || sum(s.failed) || ',' || sum(s.credits)
      from message_stats s where ${sql.join(conditions, sql` and `)}
    ) as sums
    from ${dialect.rowsTable('i', ['text', 'text'], intervals)}`
  return { compile: () => query.compile(db) }
}

/**
 * The most frequent errors over the days from `from` (inclusive) to `to` (exclusive),
 * with the number of the newest failure of each (a lookup per error listed).
 */
export function topErrors(db: Handle, accountId: string, from: string, to: string, limit: number) {
  const totals = db
    .selectFrom('message_error_stats')
    .select((eb) => ['error', eb.fn.sum<number | string>('count').as('count'), eb.fn.max('last_at').as('last_at')])
    .where('account_id', '=', accountId)
    .where('bucket', '>=', from)
    .where('bucket', '<', to)
    .groupBy('error')
    .orderBy('count', 'desc')
    .orderBy('error')
    .limit(limit)
  return db
    .selectFrom(totals.as('t'))
    .select((eb) => [
      't.error',
      't.count',
      't.last_at',
      eb
        .selectFrom('message_error_stats as newest')
        .select('newest.example_recipient')
        .where('newest.account_id', '=', accountId)
        .where('newest.bucket', '>=', from)
        .where('newest.bucket', '<', to)
        .whereRef('newest.error', '=', 't.error')
        .orderBy('newest.last_at', 'desc')
        .limit(1)
        .as('example_recipient'),
    ])
    .orderBy('t.count', 'desc')
    .orderBy('t.error')
}

/** Whether the account has this broadcast. */
export async function hasBroadcast(db: Handle, accountId: string, broadcastId: string): Promise<boolean> {
  const row = await db.selectFrom('broadcasts').select('id').where('account_id', '=', accountId).where('id', '=', broadcastId).executeTakeFirst()
  return row !== undefined
}
