/** Credits belong to accounts; sends and broadcasts debit through its public surface. */
export { debit, refund } from '../accounts/index.js'
