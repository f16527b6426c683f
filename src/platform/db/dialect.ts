import { sql, type RawBuilder } from 'kysely'

type Expr = RawBuilder<unknown>

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
  /**
   * Columns of the relay order. On SQLite tx_id is always 0 and id order is commit order:
   * ordering by id alone walks the primary key, where (tx_id, id) would sort every
   * pending event to return the first few.
   */
  readonly outboxOrder: readonly ('tx_id' | 'id')[]
  /** Whether SELECT ... FOR UPDATE [SKIP LOCKED] exists; without it the store has one writer anyway. */
  readonly rowLocks: boolean
  /**
   * Tail of a SELECT that claims rows several nodes may race for: PostgreSQL locks them and
   * passes over rows another transaction holds; SQLite has one writer, so nothing is needed.
   */
  forUpdateSkipLocked(): RawBuilder<unknown>
  /** Value to bind for a JSON column. */
  toJson(value: Record<string, unknown>): unknown
  /** A JSON column's value as read back. */
  fromJson<T>(value: unknown): T
  /** Text of a JSON object member (a number as its JSON text), null when absent. */
  jsonMemberText(column: Expr, key: string): RawBuilder<string | null>
  /** Numeric value of a JSON member that is a number or a numeric-looking string, else null. */
  jsonMemberNumber(column: Expr, key: string): RawBuilder<number | null>
  /** Numeric value of a numeric-looking text (`-12`, `3.5`), else null. */
  textNumber(text: Expr): RawBuilder<number | null>
  /** Unicode-aware, case-insensitive substring test; the needle is matched literally. */
  contains(haystack: Expr, needle: string): RawBuilder<boolean>
  /** Unicode-aware, case-insensitive prefix test; the prefix is matched literally. */
  startsWith(haystack: Expr, prefix: string): RawBuilder<boolean>
  /** Refreshes planner statistics after a bulk change. */
  analyze(table: string): RawBuilder<unknown>
  /**
   * The newest value the table's `id` sequence handed out (SQLite AUTOINCREMENT,
   * PostgreSQL identity), null before the first. Ids past it were never issued.
   */
  lastIssuedId(table: string): RawBuilder<number | null>
}

/** The numeric-looking text the platform compares as a number: optional minus, digits, optional fraction. */
export const NUMERIC_TEXT = /^-?[0-9]+(\.[0-9]+)?$/

// SQLite has no regular expressions; GLOB runs in C and expresses NUMERIC_TEXT in five
// tests: starts with a digit or a minus and a digit, holds only digits, dots and minuses,
// has no minus after the first character, at most one dot, and does not end in a dot.
function sqliteIsNumericText(text: Expr): RawBuilder<boolean> {
  return sql<boolean>`((${text} glob '[0-9]*' or ${text} glob '-[0-9]*') and ${text} not glob '*[^0-9.-]*' and ${text} not glob '?*-*' and ${text} not glob '*.*.*' and ${text} not glob '*.')`
}

const sqlitePath = (key: string) => `$."${key}"`

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  outboxVisible: () => sql<boolean>`1 = 1`,
  outboxAfter: (_txId, id) => sql<boolean>`id > ${id}`,
  outboxOrder: ['id'],
  rowLocks: false,
  forUpdateSkipLocked: () => sql``,
  toJson: (value) => JSON.stringify(value),
  fromJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
  // `->>` unquotes strings; `->` keeps a number's JSON text, which is how it was written.
  jsonMemberText: (column, key) =>
    sql<string | null>`(case when json_type(${column}, ${sqlitePath(key)}) = 'text' then ${column} ->> ${sqlitePath(key)} else ${column} -> ${sqlitePath(key)} end)`,
  // The member is read once, in a scalar subquery: SQLite evaluates every mention of an
  // expression again, and the numeric-text tests mention it seven times.
  jsonMemberNumber: (column, key) => {
    const v = sql.ref('member_value')
    return sql<number | null>`(select case when typeof(${v}) in ('integer', 'real') then ${v} when typeof(${v}) = 'text' and ${sqliteIsNumericText(v)} then cast(${v} as real) end from (select ${column} ->> ${sqlitePath(key)} as member_value))`
  },
  textNumber: (text) => sql<number | null>`(case when ${sqliteIsNumericText(text)} then cast(${text} as real) end)`,
  // SQLite's lower() and LIKE fold ASCII only; connect.ts registers ulower(), which uses
  // JavaScript's full Unicode lower-casing.
  contains: (haystack, needle) => sql<boolean>`instr(ulower(${haystack}), ${needle.toLowerCase()}) > 0`,
  startsWith: (haystack, prefix) => sql<boolean>`instr(ulower(${haystack}), ${prefix.toLowerCase()}) = 1`,
  analyze: (table) => sql`analyze ${sql.table(table)}`,
  // AUTOINCREMENT keeps the high-water mark in sqlite_sequence, even after the rows are gone.
  lastIssuedId: (table) => sql<number | null>`(select seq from sqlite_sequence where name = ${table})`,
}

// PostgreSQL's regular expressions read NUMERIC_TEXT's source as JavaScript does.
const PG_NUMERIC_TEXT = NUMERIC_TEXT.source

// Numbers compare as doubles, as on SQLite and in JavaScript: numeric-looking text is rounded
// to the nearest double (exact numeric would order "0.1000000000000000001" above 0.1, which
// SQLite cannot). float8 input refuses text that rounds to infinity or, from non-zero, to 0,
// so those are settled on the exact numeric first; the bounds are the halfway points
// 2^1024 - 2^970 and 2^-1075, which round to infinity and to 0.
const PG_DOUBLE_OVERFLOW = sql.raw((2n ** 1024n - 2n ** 970n).toString())
const PG_DOUBLE_UNDERFLOW_SCALE = sql.raw((2n ** 1075n).toString())
function pgDouble(text: Expr): RawBuilder<number> {
  const n = sql`(${text})::numeric`
  // Numeric-looking text under 300 characters lies between 1e-299 and 1e300, where float8
  // input can neither overflow nor underflow: the common case skips the exact checks.
  return sql<number>`(case when length(${text}) < 300 then (${text})::float8 when ${n} >= ${PG_DOUBLE_OVERFLOW} then 'infinity'::float8 when ${n} <= -${PG_DOUBLE_OVERFLOW} then '-infinity'::float8 when abs(${n}) * ${PG_DOUBLE_UNDERFLOW_SCALE} <= 1 then 0::float8 else ${n}::float8 end)`
}

export const postgresDialect: Dialect = {
  name: 'postgres',
  outboxVisible: () => sql<boolean>`tx_id < pg_snapshot_xmin(pg_current_snapshot())`,
  outboxAfter: (txId, id) => sql<boolean>`(tx_id, id) > (${txId}::xid8, ${id})`,
  outboxOrder: ['tx_id', 'id'],
  rowLocks: true,
  forUpdateSkipLocked: () => sql`for update skip locked`,
  toJson: (value) => JSON.stringify(value),
  fromJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
  jsonMemberText: (column, key) => sql<string | null>`(${column} ->> ${key}::text)`,
  jsonMemberNumber: (column, key) => {
    const text = sql`(${column} ->> ${key}::text)`
    return sql<number | null>`(case jsonb_typeof(${column} -> ${key}::text) when 'number' then ${pgDouble(text)} when 'string' then (case when ${text} ~ ${sql.lit(PG_NUMERIC_TEXT)} then ${pgDouble(text)} end) end)`
  },
  textNumber: (text) => sql<number | null>`(case when ${text} ~ ${sql.lit(PG_NUMERIC_TEXT)} then ${pgDouble(text)} end)`,
  // An ICU collation makes lower() Unicode-aware whatever the database's own locale is;
  // strpos matches the needle literally, so % and _ need no escaping.
  contains: (haystack, needle) =>
    sql<boolean>`strpos(lower(${haystack} collate "und-x-icu"), lower(${needle}::text collate "und-x-icu")) > 0`,
  startsWith: (haystack, prefix) =>
    sql<boolean>`strpos(lower(${haystack} collate "und-x-icu"), lower(${prefix}::text collate "und-x-icu")) = 1`,
  analyze: (table) => sql`analyze ${sql.table(table)}`,
  // Values handed to transactions still running count too: they may yet commit.
  lastIssuedId: (table) => sql<number | null>`pg_sequence_last_value(pg_get_serial_sequence(${table}, 'id')::regclass)`,
}
