import { sql, type Kysely, type Transaction } from 'kysely'
import { prepareQuery } from '../../platform/db/prepared.js'
import type { AccountsTable, DB } from '../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertAccount(trx: Transaction<DB>, account: AccountsTable): Promise<void> {
  await trx.insertInto('accounts').values(account).execute()
}

export async function insertUser(
  trx: Transaction<DB>,
  user: { id: string; account_id: string; email: string; password_hash: string; created_at: string },
): Promise<boolean> {
  const result = await trx
    .insertInto('users')
    .values(user)
    .onConflict((oc) => oc.column('email').doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0
}

export function findUserByEmail(db: Handle, email: string) {
  return db.selectFrom('users').select(['id', 'account_id', 'password_hash']).where('email', '=', email).executeTakeFirst()
}

/** Replaces a user's password hash, unless it changed since `from` was read. */
export async function replacePasswordHash(db: Handle, userId: string, from: string, to: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: to }).where('id', '=', userId).where('password_hash', '=', from).execute()
}

export function findAccount(db: Handle, accountId: string) {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst()
}

// GET /v1/account runs this on every call: one statement, compiled once. One row per
// inbound number (a single row with a null number when there are none); a join rather
// than an aggregate, because it reads back alike on both stores. No ORDER BY: SQLite
// would sort through a temporary b-tree, which costs more than the rest of the statement,
// for a handful of rows that are sorted here instead.
const accountWithInboundNumbers = prepareQuery(1, (db, accountId: string) =>
  db
    .selectFrom('accounts')
    .leftJoin('account_inbound_numbers', 'account_inbound_numbers.account_id', 'accounts.id')
    .select([
      'accounts.id',
      'accounts.name',
      'accounts.balance',
      'accounts.low_balance_threshold',
      'accounts.created_at',
      'account_inbound_numbers.phone_number',
    ])
    .where('accounts.id', '=', accountId),
)

/** The account and its inbound numbers in order; undefined when the account does not exist. */
export async function findAccountWithInboundNumbers(db: Kysely<DB>, accountId: string) {
  const rows = await accountWithInboundNumbers(db, accountId)
  const first = rows[0]
  if (first === undefined) return undefined
  const inboundNumbers: string[] = []
  for (const row of rows) if (row.phone_number !== null) inboundNumbers.push(row.phone_number)
  // E.164 numbers are '+' and digits: code-unit order is the order both stores would give.
  inboundNumbers.sort()
  return { ...first, inboundNumbers }
}

export async function updateAccount(
  trx: Transaction<DB>,
  accountId: string,
  changes: { name?: string; low_balance_threshold?: number; updated_at: string },
): Promise<void> {
  await trx.updateTable('accounts').set(changes).where('id', '=', accountId).execute()
}

/** Inbound numbers among `numbers` that another account holds. */
export async function findNumbersHeldElsewhere(trx: Transaction<DB>, accountId: string, numbers: string[]): Promise<string[]> {
  if (numbers.length === 0) return []
  const rows = await trx
    .selectFrom('account_inbound_numbers')
    .select('phone_number')
    .where('phone_number', 'in', numbers)
    .where('account_id', '<>', accountId)
    .execute()
  return rows.map((r) => r.phone_number)
}

export async function replaceInboundNumbers(trx: Transaction<DB>, accountId: string, numbers: string[]): Promise<void> {
  await trx.deleteFrom('account_inbound_numbers').where('account_id', '=', accountId).execute()
  if (numbers.length > 0) {
    await trx
      .insertInto('account_inbound_numbers')
      .values(numbers.map((phone_number) => ({ phone_number, account_id: accountId })))
      .execute()
  }
}

/** Adds credits in one statement; undefined when the account does not exist. */
export async function addCredits(trx: Transaction<DB>, accountId: string, amount: number, at: string) {
  return trx
    .updateTable('accounts')
    .set({ balance: sql`balance + ${amount}`, updated_at: at })
    .where('id', '=', accountId)
    .returning('balance')
    .executeTakeFirst()
}
