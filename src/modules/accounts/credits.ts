import { sql, type Transaction } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import { emit } from '../../platform/outbox/emit.js'
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
  if (!row) {
    const current = await trx.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirst()
    const problem = new InsufficientCredits(`this costs ${amount} credits and the balance is ${current?.balance ?? 0}`)
    problem.errors = [{ field: 'credits', message: `needs ${amount}, has ${current?.balance ?? 0}` }]
    throw problem
  }
  const balance = Number(row.balance)
  const threshold = Number(row.low_balance_threshold)
  if (balance + amount >= threshold && balance < threshold) {
    await emit(trx, { type: 'LowBalance', accountId, occurredAt: at, data: { balance, threshold, at: at.toISOString() } })
  }
  return balance
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
