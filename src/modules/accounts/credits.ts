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
 * A write of debitWith's statement that adds to counters (an upsert). PostgreSQL lets one
 * statement upsert a row only once, so where debits go together their writes of the same
 * `name` become one: `write` is given the `part` of each, in order.
 */
export interface CombinedWrite<T> {
  name: string
  part: T
  write(parts: readonly T[]): RawBuilder<unknown>
}

/** The body of a WITH member of debitWith's statement; it selects from `debit`. */
export type PaidWrite = RawBuilder<unknown> | CombinedWrite<unknown>

/**
 * The debit and the writes it pays for as one statement in autocommit, for a store with
 * writable WITH (PostgreSQL). The account's row is locked from the debit to the commit;
 * in a transaction of several statements that lock would also be held across the round
 * trips after the debit, and every send of the account waits for it. Each of `paidWrites`
 * is the body of a WITH member (an INSERT, UPDATE or DELETE) that must select from
 * `debit`, so it writes nothing when the balance is short. Same LowBalance rule as
 * debit(); 402 and nothing written when the balance is short.
 *
 * Debits of one account that arrive while its statement is in flight wait and then go
 * together in the next one (a group commit): the row's lock is held until the commit's
 * WAL flush, so one account's sends would otherwise commit one flush at a time. When the
 * balance is short for the whole group, or one of its writes fails, each debit of the
 * group runs alone, in order, and gets its own answer. A group that crosses the
 * LowBalance threshold fires it once, with the balance after the group.
 */
export function debitWith(db: Kysely<DB>, accountId: string, amount: number, at: Date, paidWrites: readonly PaidWrite[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let accounts = waiting.get(db)
    if (!accounts) waiting.set(db, (accounts = new Map()))
    let queue = accounts.get(accountId)
    if (!queue) accounts.set(accountId, (queue = []))
    queue.push({ amount, at, paidWrites, resolve, reject })
    if (queue.length === 1) void runQueue(db, accountId, accounts, queue)
  })
}

interface PendingDebit {
  amount: number
  at: Date
  paidWrites: readonly PaidWrite[]
  resolve(): void
  reject(err: unknown): void
}

/** Per store handle and account: the debits waiting, the first of them in flight. */
const waiting = new WeakMap<Kysely<DB>, Map<string, PendingDebit[]>>()
/** Bounds one statement's size (a send brings about 25 parameters). */
const MOST_GROUPED = 50

async function runQueue(db: Kysely<DB>, accountId: string, accounts: Map<string, PendingDebit[]>, queue: PendingDebit[]): Promise<void> {
  while (queue.length > 0) {
    // Debits arriving meanwhile join `queue`: they go in the next statement.
    const group = queue.slice(0, MOST_GROUPED)
    await runGroup(db, accountId, group)
    queue.splice(0, group.length)
  }
  accounts.delete(accountId)
}

async function runGroup(db: Kysely<DB>, accountId: string, group: readonly PendingDebit[]): Promise<void> {
  if (group.length > 1) {
    const amount = group.reduce((sum, debit) => sum + debit.amount, 0)
    try {
      // Unnamed: the text changes with the group, and named texts are few and kept per connection.
      await debitInOneStatement(db, accountId, amount, group.at(-1)!.at, group.flatMap((debit) => debit.paidWrites), false)
      for (const debit of group) debit.resolve()
      return
    } catch {
      // Each alone below: the ones the balance covers go through, the others get 402.
    }
  }
  for (const debit of group) {
    try {
      await debitInOneStatement(db, accountId, debit.amount, debit.at, debit.paidWrites, true)
      debit.resolve()
    } catch (err) {
      debit.reject(err)
    }
  }
}

async function debitInOneStatement(
  db: Kysely<DB>,
  accountId: string,
  amount: number,
  at: Date,
  paidWrites: readonly PaidWrite[],
  named: boolean,
): Promise<void> {
  const lowBalance = emitFromRow(
    { type: 'LowBalance', accountId, occurredAt: at },
    sql<string>`json_build_object('balance', balance, 'threshold', low_balance_threshold, 'at', ${at.toISOString()}::text)::text`,
    sql`debit where balance + ${amount} >= low_balance_threshold and balance < low_balance_threshold`,
  )
  const members = combined(paidWrites).map((write, i) => sql`, ${sql.raw(`paid_${i}`)} as (${write})`)
  const statement = sql<{ balance: string | number; low_balance: boolean }>`
    with debit as (
      update accounts set balance = balance - ${amount}, updated_at = ${at.toISOString()}
      where id = ${accountId} and balance >= ${amount}
      returning balance, low_balance_threshold
    ), low_balance as (${lowBalance})${sql.join(members, sql``)}
    select balance, exists (select from low_balance) as low_balance from debit`
  // Named: PostgreSQL plans a single send's statement of several writes once per connection.
  const rows = named ? await executeNamed(db, statement.compile(db)) : (await statement.execute(db)).rows
  const row = rows[0]
  if (!row) throw await insufficient(db, accountId, amount)
  if (row.low_balance) announceEmitted()
}

/** The writes as members: combined ones once per name, where the first of that name stood. */
function combined(writes: readonly PaidWrite[]): RawBuilder<unknown>[] {
  const byName = new Map<string, { write: CombinedWrite<unknown>; parts: unknown[] }>()
  const members: (RawBuilder<unknown> | string)[] = []
  for (const write of writes) {
    if (!('part' in write)) members.push(write)
    else if (byName.has(write.name)) byName.get(write.name)!.parts.push(write.part)
    else {
      byName.set(write.name, { write, parts: [write.part] })
      members.push(write.name)
    }
  }
  return members.map((member) => {
    if (typeof member !== 'string') return member
    const { write, parts } = byName.get(member)!
    return write.write(parts)
  })
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
