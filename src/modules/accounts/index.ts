/** Accounts: sign-up, login, dashboard sessions, the account record and its credits. */
export { accountsRoutes } from './routes.js'
/** Builds the signer that issues and verifies dashboard session JWTs. */
export { createSessionSigner, type SessionSigner } from './sessions.js'
export type { AccountsDeps } from './service.js'
/** Debits and refunds of the credit balance, in the caller's transaction (LowBalance included). */
export { debit, debitWith, refund } from './credits.js'
