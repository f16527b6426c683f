import type { Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { DB } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import { parsePhone } from '../../platform/phone.js'
import { Conflict, Forbidden, NotFound, Unauthorized, ValidationFailed } from '../../platform/problems.js'
import type { PasswordHasher } from './passwords.js'
import * as queries from './queries.js'
import type { Account, LoginBody, PatchAccountBody, SignupBody } from './schemas.js'
import type { SessionSigner } from './sessions.js'

export interface AccountsDeps {
  db: Kysely<DB>
  clock: Clock
  sessions: SessionSigner
  passwords: PasswordHasher
  allowSignup: boolean
  signupCredits: number
}

/** New accounts are warned once their balance drops under this many credits. */
export const DEFAULT_LOW_BALANCE_THRESHOLD = 100

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

export async function signUp(deps: AccountsDeps, input: SignupBody): Promise<{ accountId: string; userId: string }> {
  if (!deps.allowSignup) throw new Forbidden('Sign-up is disabled on this platform')
  const email = normalizeEmail(input.email)
  const passwordHash = await deps.passwords.hash(input.password)
  const now = deps.clock.now().toISOString()
  const accountId = newId()
  const userId = newId()
  await deps.db.transaction().execute(async (trx) => {
    await queries.insertAccount(trx, {
      id: accountId,
      name: input.accountName?.trim() || email,
      balance: deps.signupCredits,
      low_balance_threshold: DEFAULT_LOW_BALANCE_THRESHOLD,
      created_at: now,
      updated_at: now,
    })
    if (!(await queries.insertUser(trx, { id: userId, account_id: accountId, email, password_hash: passwordHash, created_at: now }))) {
      throw new Conflict('An account with this email already exists')
    }
  })
  return { accountId, userId }
}

export async function logIn(deps: AccountsDeps, input: LoginBody): Promise<{ token: string; expiresAt: string }> {
  const user = await queries.findUserByEmail(deps.db, normalizeEmail(input.email))
  // Always run one scrypt: an unknown email costs what a wrong password costs.
  const valid = await deps.passwords.verify(input.password, user?.password_hash ?? (await deps.passwords.decoy))
  if (!user || !valid) throw new Unauthorized('Invalid email or password')
  // Made at another cost (PASSWORD_HASH_COST changed since): made again at this one, so a
  // raised cost reaches every active user, and a known email costs what an unknown one does.
  if (!deps.passwords.isCurrent(user.password_hash)) {
    await queries.replacePasswordHash(deps.db, user.id, user.password_hash, await deps.passwords.hash(input.password))
  }
  const { token, expiresAt } = await deps.sessions.issue({ userId: user.id, accountId: user.account_id })
  return { token, expiresAt: expiresAt.toISOString() }
}

export async function getAccount(deps: Pick<AccountsDeps, 'db'>, accountId: string): Promise<Account> {
  const row = await queries.findAccountWithInboundNumbers(deps.db, accountId)
  if (!row) throw new NotFound('account', accountId)
  return {
    id: row.id,
    name: row.name,
    balance: Number(row.balance),
    lowBalanceThreshold: Number(row.low_balance_threshold),
    inboundNumbers: row.inboundNumbers,
    createdAt: row.created_at,
  }
}

export async function updateAccount(deps: AccountsDeps, accountId: string, input: PatchAccountBody): Promise<Account> {
  const numbers = input.inboundNumbers === undefined ? undefined : normalizeInboundNumbers(input.inboundNumbers)
  await deps.db.transaction().execute(async (trx) => {
    if (!(await queries.findAccount(trx, accountId))) throw new NotFound('account', accountId)
    await queries.updateAccount(trx, accountId, {
      ...(input.name !== undefined ? { name: input.name.trim() } : {}),
      ...(input.lowBalanceThreshold !== undefined ? { low_balance_threshold: input.lowBalanceThreshold } : {}),
      updated_at: deps.clock.now().toISOString(),
    })
    if (numbers !== undefined) {
      // A number routes inbound SMS to one account only.
      const taken = await queries.findNumbersHeldElsewhere(trx, accountId, numbers)
      if (taken.length > 0) throw new Conflict(`Inbound number ${taken.join(', ')} belongs to another account`)
      await queries.replaceInboundNumbers(trx, accountId, numbers)
    }
  })
  return getAccount(deps, accountId)
}

function normalizeInboundNumbers(values: string[]): string[] {
  const errors: { field: string; message: string }[] = []
  const numbers = new Set<string>()
  values.forEach((value, index) => {
    const parsed = parsePhone(value)
    if (!parsed) errors.push({ field: `inboundNumbers[${index}]`, message: 'is not a valid E.164 phone number' })
    else numbers.add(parsed.number)
  })
  if (errors.length > 0) throw new ValidationFailed(errors)
  return [...numbers]
}

/** Operator top-up. Refuses amounts that would take the balance past exact integer range. */
export async function addCredits(deps: Pick<AccountsDeps, 'db' | 'clock'>, accountId: string, amount: number): Promise<{ balance: number }> {
  return deps.db.transaction().execute(async (trx) => {
    const account = await queries.findAccount(trx, accountId)
    if (!account) throw new NotFound('account', accountId)
    if (Number(account.balance) + amount > Number.MAX_SAFE_INTEGER) {
      throw ValidationFailed.field('amount', 'would take the balance past the largest balance an account can hold')
    }
    const row = await queries.addCredits(trx, accountId, amount, deps.clock.now().toISOString())
    return { balance: Number(row!.balance) }
  })
}
