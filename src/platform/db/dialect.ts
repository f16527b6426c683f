import { sql, type RawBuilder } from 'kysely'

/**
 * The one place that knows SQLite from PostgreSQL. Modules ask for capabilities and
 * helpers here and never test the dialect name themselves.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres'
  /**
   * Predicate on the outbox that keeps the relay from reading past a transaction that
   * may still commit. PostgreSQL hands out identity values before commit, so a row with
   * a higher id can become visible before one with a lower id; ordering by the writing
   * transaction's id and reading only below the oldest running transaction closes that
   * gap. SQLite has a single writer, so commit order is id order and nothing is needed.
   */
  outboxVisible(): RawBuilder<boolean>
  /** Predicate on the outbox: rows after a consumer's cursor, in relay order. */
  outboxAfter(txId: string, id: number): RawBuilder<boolean>
  /** Row-lock suffix for claiming work so no two nodes take the same row. */
  readonly skipLocked: boolean
  /** Case-insensitive, Unicode-aware lower-casing of a text expression. */
  lower(expr: RawBuilder<unknown>): RawBuilder<string>
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  outboxVisible: () => sql<boolean>`1 = 1`,
  outboxAfter: (_txId, id) => sql<boolean>`id > ${id}`,
  skipLocked: false,
  // SQLite's own lower() folds ASCII only; connect.ts registers a JavaScript one.
  lower: (expr) => sql<string>`ulower(${expr})`,
}

export const postgresDialect: Dialect = {
  name: 'postgres',
  outboxVisible: () => sql<boolean>`tx_id < pg_snapshot_xmin(pg_current_snapshot())`,
  outboxAfter: (txId, id) => sql<boolean>`(tx_id, id) > (${txId}::xid8, ${id})`,
  skipLocked: true,
  // An ICU collation makes lower() Unicode-aware whatever the database's own locale is.
  lower: (expr) => sql<string>`lower(${expr} collate "und-x-icu")`,
}
