/**
 * Child process of the outbox crash test. Builds the app on the database given as JSON in
 * MP_CRASH_DATABASE, commits one event for MP_CRASH_ACCOUNT_ID, prints its id and dies by
 * SIGKILL. The app is never made ready (no listen, no ready), so its relay never starts:
 * the event is committed and never relayed, as if the process died right after the commit.
 */
import { writeSync } from 'node:fs'
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import type { DatabaseConfig } from '../../src/platform/config.js'
import { emit } from '../../src/platform/outbox/emit.js'
import { testConfig } from './harness.js'

const database = JSON.parse(process.env.MP_CRASH_DATABASE ?? '') as DatabaseConfig
const accountId = process.env.MP_CRASH_ACCOUNT_ID ?? ''

const app = await buildApp(testConfig(database, { outboxPollMs: 60_000 }), { logger: pino({ level: 'silent' }) })
const { store, clock } = app.platform
const eventId = await store.db
  .transaction()
  .execute((trx) => emit(trx, { type: 'ContactCreated', accountId, occurredAt: clock.now(), data: { contactId: 'before-the-crash' } }))
// Written synchronously: nothing buffered may be lost to the kill below.
writeSync(1, `${eventId}\n`)
process.kill(process.pid, 'SIGKILL')
