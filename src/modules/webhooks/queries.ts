// The webhooks module's store queries as one namespace (`import * as queries`); each concern's live in a file of their own.
export * from './webhook-queries.js'
export * from './delivery-queries.js'
export * from './job-queries.js'
export * from './log-queries.js'
export * from './retention-queries.js'
