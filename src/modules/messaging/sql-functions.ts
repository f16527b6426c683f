/**
 * SQL functions the messaging queries call, for SQLite, which has no stored functions:
 * the store imports this module on every connection it opens (its URL is passed to
 * openStore in app.ts) and calls registerSqliteFunctions. PostgreSQL gets the same
 * functions from migrations (2026-11-27-0014-sms-segments.ts).
 */
import type BetterSqlite3 from 'better-sqlite3'
import { analyzeSms } from './encoding.js'

export function registerSqliteFunctions(db: BetterSqlite3.Database): void {
  // The parts a text is sent and charged as, counted by the code that sends it.
  db.function('sms_segments', { deterministic: true }, (text: unknown) => (text === null || text === undefined ? null : analyzeSms(String(text)).segments))
}
