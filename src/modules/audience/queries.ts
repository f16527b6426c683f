// The SQL lives with its sub-area: contacts/queries.ts, lists/queries.ts,
// imports/queries.ts, segments/queries.ts. This re-export is for segments/counts.ts.
export { countRecipientsForEach } from './segments/queries.js'
