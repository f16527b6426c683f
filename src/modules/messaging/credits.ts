/** Credits belong to accounts; sends and broadcasts debit through its public surface. */
export { debit, debitWith, refund } from '../accounts/index.js'
