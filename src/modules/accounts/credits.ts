import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import { executeNamed } from '../../platform/db/prepared.js'
import type { DB } from '../../platform/db/schema.js'
import { announceEmitted, emit, emitFromRow } from '../../platform/outbox/emit.js'
import { InsufficientCredits } from '../../platform/problems.js'

/**
 * Takes `amount` credits in the caller's transaction, or throws 402 and takes nothing.
 * One conditional UPDATE: two concurrent debits can never take the balance below zero,
 * on either store. LowBalance fires when this debit crosses the threshold: from
 * at-or-above it to below it, so once per crossing.
 */
export async function debit(trx: Transaction<DB>, accountId: string, amount: number, at: Date): Promise<number> {
  if (amount === 0) return -1
  const row = await trx
    .updateTable('accounts')
    .set({ balance: sql`balance - ${amount}`, updated_at: at.toISOString() })
    .where('id', '=', accountId)
    .where('balance', '>=', amount)
    .returning(['balance', 'low_balance_threshold'])
    .executeTakeFirst()
  if (!row) throw await insufficient(trx, accountId, amount)
  const balance = Number(row.balance)
  const threshold = Number(row.low_balance_threshold)
  if (balance + amount >= threshold && balance < threshold) {
    await emit(trx, { type: 'LowBalance', accountId, occurredAt: at, data: { balance, threshold, at: at.toISOString() } })
  }
  return balance
}

/**
 * The debit and the writes it pays for as one statement in autocommit, for a store with
 * writable WITH (PostgreSQL). The account's row is locked from the debit to the commit;
 * in a transaction of several statements that lock would also be held across the round
 * trips after the debit, and every send of the account waits for it. Each of `paidWrites`
 * is the body of a WITH member (an INSERT, UPDATE or DELETE) that must select from
 * `debit`, so it writes nothing when the balance is short. Same answer and LowBalance
 * rule as debit(); 402 and nothing written when the balance is short.
 */
export async function debitWith(
  db: Kysely<DB>,
  accountId: string,
  amount: number,
  at: Date,
  paidWrites: readonly RawBuilder<unknown>[],
): Promise<number> {
  const lowBalance = emitFromRow(
    { type: 'LowBalance', accountId, occurredAt: at },
    sql<string>`json_build_object('balance', balance, 'threshold', low_balance_threshold, 'at', ${at.toISOString()}::text)::text`,
    sql`debit where balance + ${amount} >= low_balance_threshold and balance < low_balance_threshold`,
  )
  const members = paidWrites.map((write, i) => sql`, ${sql.raw(`paid_${i}`)} as (${write})`)
  // Named: PostgreSQL plans this statement of several writes once per connection.
  const rows = await executeNamed(
    db,
    sql<{ balance: string | number; low_balance: boolean }>`
    with debit as (
      update accounts set balance = balance - ${amount}, updated_at = ${at.toISOString()}
      where id = ${accountId} and balance >= ${amount}
      returning balance, low_balance_threshold
    ), low_balance as (${lowBalance})${sql.join(members, sql``)}
    select balance, exists (select from low_balance) as low_balance from debit`.compile(db),
  )
  const row = rows[0]
  if (!row) throw await insufficient(db, accountId, amount)
  if (row.low_balance) announceEmitted()
  return Number(row.balance)
}

async function insufficient(db: Kysely<DB> | Transaction<DB>, accountId: string, amount: number): Promise<InsufficientCredits> {
  const current = await db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirst()
  const problem = new InsufficientCredits(`this costs ${amount} credits and the balance is ${current?.balance ?? 0}`)
  problem.errors = [{ field: 'credits', message: `needs ${amount}, has ${current?.balance ?? 0}` }]
  return problem
}

/** Gives back credits taken for sends that will not happen (a recipient who opted out before dispatch). */
export async function refund(trx: Transaction<DB>, accountId: string, amount: number, at: Date): Promise<void> {
  if (amount <= 0) return
  await trx
    .updateTable('accounts')
    .set({ balance: sql`balance + ${amount}`, updated_at: at.toISOString() })
    .where('id', '=', accountId)
    .execute()
}
