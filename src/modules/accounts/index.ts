/** Accounts: sign-up, login, dashboard sessions, the account record and its credits. */
export { createAccounts, type AccountsModule, type AccountsOptions } from './accounts.js'
/** Debits and refunds of the credit balance, in the caller's transaction (LowBalance included). */
export { debit, debitWith, refund } from './credits.js'
