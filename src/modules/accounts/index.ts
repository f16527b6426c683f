/** Accounts: sign-up, login, dashboard sessions, the account record and its credits. */
export { createAccounts, type AccountsModule, type AccountsOptions } from './accounts.js'
/** Debits and refunds of the credit balance, in the caller's transaction (LowBalance included). */
export { debit, debitWith, refund } from './credits.js'
/** A write debitWith's statement makes once for debits that go together (an upsert of counters). */
export type { CombinedWrite, PaidWrite } from './credits.js'
