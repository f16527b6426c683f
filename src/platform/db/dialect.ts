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
   * Whether WITH may hold INSERT, UPDATE and DELETE, so that one statement writes several
   * tables: in autocommit it holds its row locks only while it runs and commits.
   */
  readonly writableCtes: boolean
  /**
   * Whether a FROM item may be a LATERAL subquery, run once per row before it: a lookup
   * per value of a list that the planner cannot turn into a scan of the whole table, as
   * PostgreSQL did with an IN list of a thousand values on a table a few hundred thousand
   * rows long (SQLite looks each value of an IN list up in the index anyway).
   */
  readonly lateralJoins: boolean
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
  /**
   * Whether a JSON object member's text (as jsonMemberText) equals `value`; null when the
   * member is absent, so `is not true` is "does not equal".
   */
  jsonMemberEquals(column: Expr, key: string, value: string): RawBuilder<boolean | null>
  /**
   * The keys of a JSON object column as a table for a FROM clause, named `alias`, with one
   * column `key`: json_each on SQLite, jsonb_object_keys on PostgreSQL. Listed after the
   * table whose column it reads, it runs once per row (a lateral call on both stores).
   */
  jsonObjectKeys(column: Expr, alias: string): RawBuilder<unknown>
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
   * After a bulk change to these tables: clears the index entries of the row versions it
   * left behind and refreshes the planner's statistics, or undefined where neither is
   * needed. PostgreSQL keeps an updated row's old index entries until VACUUM, and an index
   * scan still walks them: a queue's partial index, after a million rows moved out of it,
   * costs every claim milliseconds until autovacuum comes round. And statistics taken while
   * a table was small make the planner scan a whole index range instead of looking up a
   * batch's keys (a receipts batch of 1,000 took 275 ms instead of 4 ms at a million
   * parts). SQLite removes an entry when its row changes, and its planner looks keys up
   * without statistics.
   */
  reclaimSpace(tables: readonly string[]): RawBuilder<unknown> | undefined
  /**
   * The newest value the table's `id` sequence handed out (SQLite AUTOINCREMENT,
   * PostgreSQL identity), null before the first. Ids past it were never issued.
   */
  lastIssuedId(table: string): RawBuilder<number | null>
  /**
   * Rows given by the caller as a table for a FROM clause, named `alias`, with columns
   * column1, column2, … of the given types (text, integer, or null). Both read the rows as
   * one JSON text (json_each on SQLite, jsonb_array_elements on PostgreSQL): one parameter
   * however many rows, where a VALUES list of hundreds of rows cost PostgreSQL a
   * millisecond to parse and plan each time, and the calling thread milliseconds to compile.
   */
  rowsTable(alias: string, types: readonly ColumnType[], rows: readonly (readonly unknown[])[]): RawBuilder<unknown>
}

/** Column types rowsTable takes. */
export type ColumnType = 'text' | 'integer'

/**
 * Rows as one JSON text, for PostgreSQL's jsonb_array_elements() and SQLite's json_each(): JSON.stringify runs in
 * native code, where pg builds an array literal per column in JavaScript, element by
 * element, on the calling thread (several milliseconds for a thousand rows). A lone
 * surrogate, which JSON.stringify writes as an escape PostgreSQL's JSON refuses, becomes
 * U+FFFD, as it does in any string pg sends.
 */
export function rowsJson(rows: readonly (readonly unknown[])[]): string {
  const json = JSON.stringify(rows)
  // Only a lone surrogate is written as a \ud… escape (or a backslash before "ud", rarely).
  if (!json.includes('\\ud')) return json
  return JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'string' ? toWellFormed(value) : value))
}

/** String.prototype.toWellFormed (Node 20), which the ES2023 library does not declare. */
function toWellFormed(text: string): string {
  return (text as string & { toWellFormed(): string }).toWellFormed()
}

/** The numeric-looking text the platform compares as a number: optional minus, digits, optional fraction. */
export const NUMERIC_TEXT = /^-?[0-9]+(\.[0-9]+)?$/

// SQLite has no regular expressions; GLOB runs in C and expresses NUMERIC_TEXT in five
// tests: starts with a digit or a minus and a digit, holds only digits, dots and minuses,
// has no minus after the first character, at most one dot, and does not end in a dot.
function sqliteIsNumericText(text: Expr): RawBuilder<boolean> {
  return sql<boolean>`((${text} glob '[0-9]*' or ${text} glob '-[0-9]*') and ${text} not glob '*[^0-9.-]*' and ${text} not glob '?*-*' and ${text} not glob '*.*.*' and ${text} not glob '*.')`
}

// Digits only, the common numeric-looking text, in one GLOB.
const sqliteIsDigits = (text: Expr) => sql<boolean>`(${text} not glob '*[^0-9]*' and ${text} <> '')`

// The number of a text, or null: digits only take one GLOB, anything else the five above.
function sqliteTextNumber(text: Expr): RawBuilder<number | null> {
  return sql<number | null>`(case when ${sqliteIsDigits(text)} then cast(${text} as real) when ${sqliteIsNumericText(text)} then cast(${text} as real) end)`
}

// The JSON text of a member that is a number, true, false or null. SQLite's ->> gives
// those as a number or null, which never equals text, and any other member as its text
// (a string unquoted, an object or array as JSON text, as ->); so a value that is none of
// these texts equals jsonMemberText exactly when it equals ->>.
const JSON_NON_STRING_TEXT = /^(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null)$/

const sqlitePath = (key: string) => `$."${key}"`

// Case-insensitive matching folds case with full Unicode lower-casing (JavaScript's
// toLowerCase; ICU's lower() on PostgreSQL), which is slow per row on both stores, while
// ASCII-only lower-casing (SQLite's lower(), PostgreSQL's lower() under collation "C")
// is native and cheap. Full lower-casing maps each character on its own (its one context
// rule, final sigma, concerns Σ only), maps ASCII characters as ASCII lower-casing does,
// and maps only two non-ASCII characters to text holding ASCII: U+0130 İ to "i̇" and
// U+212A KELVIN SIGN to "k" (segments.test.ts checks every code point). Hence, for a
// folded needle n:
// - n holds non-ASCII: an ASCII haystack never matches, as its lower-casing is ASCII;
// - n is ASCII: a match in the fully folded haystack is a run of characters from ASCII
//   characters of the haystack, or from İ or K when n holds i or k; so unless the
//   haystack holds one of those, ASCII folding finds exactly the same matches.
/** The non-ASCII characters whose lower case holds each ASCII letter, where any does. */
export const NON_ASCII_LOWERING_TO_ASCII: Readonly<Record<string, string>> = { i: '\u0130', k: '\u212A' }

const isAscii = (text: string) => /^[\x00-\x7f]*$/.test(text)

/** For an ASCII folded needle: the characters a haystack must not hold for ASCII folding to be exact. */
function asciiFoldingHazards(folded: string): string[] {
  return Object.keys(NON_ASCII_LOWERING_TO_ASCII)
    .filter((letter) => folded.includes(letter))
    .map((letter) => NON_ASCII_LOWERING_TO_ASCII[letter]!)
}

type Match = 'contains' | 'startsWith'

/** A LIKE pattern finding `text` literally, with `\` as the escape character. */
function likePattern(text: string, match: Match): string {
  const literal = text.replace(/[\\%_]/g, (c) => `\\${c}`)
  return match === 'contains' ? `%${literal}%` : `${literal}%`
}

// SQLite has no Unicode lower-casing of its own: connect.ts and sqlite-reader.ts register
// ulower(), a JavaScript function, costly per row. A haystack is ASCII when its length in
// characters equals its length in bytes (UTF-8 writes every other character in 2 or more).
function sqliteFoldedMatch(haystack: Expr, needle: string, match: Match): RawBuilder<boolean> {
  const folded = needle.toLowerCase()
  const unicode =
    match === 'contains' ? sql<boolean>`instr(ulower(${haystack}), ${folded}) > 0` : sql<boolean>`instr(ulower(${haystack}), ${folded}) = 1`
  if (!isAscii(folded)) return sql<boolean>`(length(${haystack}) <> octet_length(${haystack}) and ${unicode})`
  // LIKE folds ASCII only, as lower() does, and with the needle's metacharacters escaped
  // matches it literally, without making a lower-cased copy of each haystack.
  const ascii = sql<boolean>`(${haystack} like ${likePattern(folded, match)} escape '\\')`
  const hazards = asciiFoldingHazards(folded)
  if (hazards.length === 0) return ascii
  const hazardous = sql.join(hazards.map((c) => sql`instr(${haystack}, ${c}) > 0`), sql` or `)
  return sql<boolean>`(case when ${hazardous} then ${unicode} else ${ascii} end)`
}

// An ICU collation makes lower() Unicode-aware whatever the database's own locale is;
// collation "C" makes it ASCII-only (and native). strpos matches the needle literally.
function postgresFoldedMatch(haystack: Expr, needle: string, match: Match): RawBuilder<boolean> {
  const asciiLower = sql`lower(${haystack} collate "C")`
  const unicodeLower = sql`lower(${haystack} collate "und-x-icu")`
  const found = (text: Expr, n: Expr | string) =>
    match === 'contains' ? sql<boolean>`strpos(${text}, ${n}) > 0` : sql<boolean>`strpos(${text}, ${n}) = 1`
  // A prefix LIKE stops at the first difference, where strpos searches the whole text; and
  // a haystack whose ASCII folding starts with the prefix starts with its first character
  // in either case, which two LIKEs find without lower-casing (a copy of) every haystack.
  const foundAscii = (n: string) => {
    if (match === 'contains') return found(asciiLower, n)
    const prefixed = sql<boolean>`(${asciiLower} like ${likePattern(n, match)})`
    if (n === '') return prefixed
    const first = [...new Set([n[0]!, n[0]!.toUpperCase()])].map((c) => sql`${haystack} like ${likePattern(c, match)}`)
    return sql<boolean>`((${sql.join(first, sql` or `)}) and ${prefixed})`
  }
  if (!isAscii(needle)) {
    // The needle is folded by ICU in the query, as the haystack is; for an ASCII haystack
    // ICU's folding is ASCII folding.
    const folded = sql`lower(${needle}::text collate "und-x-icu")`
    return sql<boolean>`(case when octet_length(${haystack}) = char_length(${haystack}) then ${found(asciiLower, sql`(${folded}) collate "C"`)} else ${found(unicodeLower, folded)} end)`
  }
  // An ASCII needle folds the same under every lower-casing.
  const folded = needle.toLowerCase()
  const ascii = foundAscii(folded)
  const hazards = asciiFoldingHazards(folded)
  if (hazards.length === 0) return ascii
  const hazardous = sql.join(hazards.map((c) => sql`strpos(${haystack}, ${c}) > 0`), sql` or `)
  return sql<boolean>`(case when ${hazardous} then ${found(unicodeLower, folded)} else ${ascii} end)`
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  outboxVisible: () => sql<boolean>`1 = 1`,
  outboxAfter: (_txId, id) => sql<boolean>`id > ${id}`,
  outboxOrder: ['id'],
  rowLocks: false,
  writableCtes: false,
  lateralJoins: false,
  forUpdateSkipLocked: () => sql``,
  toJson: (value) => JSON.stringify(value),
  fromJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
  // `->>` unquotes strings; `->` keeps a number's JSON text, which is how it was written.
  // The member is read once, in a scalar subquery: SQLite evaluates every mention of an
  // expression again.
  jsonMemberText: (column, key) => {
    const v = sql.ref('member_value')
    return sql<string | null>`(select case typeof(${v}) when 'text' then ${v} else ${column} -> ${sqlitePath(key)} end from (select ${column} ->> ${sqlitePath(key)} as member_value))`
  },
  jsonMemberEquals: (column, key, value) =>
    JSON_NON_STRING_TEXT.test(value)
      ? sql<boolean | null>`(${sqliteDialect.jsonMemberText(column, key)} = ${value})`
      : sql<boolean | null>`(${column} ->> ${sqlitePath(key)} = ${value})`,
  // Read once, as above. The common members, digits as a string or an integer (GLOB reads
  // a number as its text), are settled by the first test: an integer the API stored was
  // printed by JavaScript, so it is a double and converts to real exactly.
  jsonObjectKeys: (column, alias) => sql`json_each(${column}) as ${sql.id(alias)}`,
  jsonMemberNumber: (column, key) => {
    const v = sql.ref('member_value')
    return sql<number | null>`(select case when ${sqliteIsDigits(v)} then cast(${v} as real) else (case typeof(${v}) when 'integer' then ${v} when 'real' then ${v} when 'text' then ${sqliteTextNumber(v)} end) end from (select ${column} ->> ${sqlitePath(key)} as member_value))`
  },
  textNumber: (text) => sqliteTextNumber(text),
  contains: (haystack, needle) => sqliteFoldedMatch(haystack, needle, 'contains'),
  startsWith: (haystack, prefix) => sqliteFoldedMatch(haystack, prefix, 'startsWith'),
  analyze: (table) => sql`analyze ${sql.table(table)}`,
  reclaimSpace: () => undefined,
  // AUTOINCREMENT keeps the high-water mark in sqlite_sequence, even after the rows are gone.
  lastIssuedId: (table) => sql<number | null>`(select seq from sqlite_sequence where name = ${table})`,
  // The rows travel as one JSON text: a VALUES list of a thousand rows was ten thousand
  // parameters for Kysely to compile on the calling thread, milliseconds at a time. A lone
  // surrogate becomes U+FFFD first, as a string parameter does: SQLite would decode its
  // escape to bytes that are not UTF-8, which the two better-sqlite3 majors read back
  // differently.
  rowsTable: (alias, types, rows) => {
    const columns = types.map((_, i) => sql.raw(`value ->> ${i} as column${i + 1}`))
    return sql`(select ${sql.join(columns)} from json_each(${rowsJson(rows)})) as ${sql.ref(alias)}`
  },
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

// The number of a text, or null. A regular expression per row costs more than the rest of
// a count, so digits only (the common case) are recognised by ltrim, which removes them
// all, and converted directly under 300 characters (see pgDouble; '' is no number, and
// nullif keeps it from the cast). Anything else goes through NUMERIC_TEXT.
function pgTextNumber(text: Expr): RawBuilder<number | null> {
  return sql<number | null>`(case when ltrim(${text}, '0123456789') = '' and length(${text}) < 300 then nullif(${text}, '')::float8 when ${text} ~ ${sql.lit(PG_NUMERIC_TEXT)} then ${pgDouble(text)} end)`
}

export const postgresDialect: Dialect = {
  name: 'postgres',
  outboxVisible: () => sql<boolean>`tx_id < pg_snapshot_xmin(pg_current_snapshot())`,
  outboxAfter: (txId, id) => sql<boolean>`(tx_id, id) > (${txId}::xid8, ${id})`,
  outboxOrder: ['tx_id', 'id'],
  rowLocks: true,
  writableCtes: true,
  lateralJoins: true,
  forUpdateSkipLocked: () => sql`for update skip locked`,
  toJson: (value) => JSON.stringify(value),
  fromJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
  jsonMemberText: (column, key) => sql<string | null>`(${column} ->> ${key}::text)`,
  jsonMemberEquals: (column, key, value) => sql<boolean | null>`((${column} ->> ${key}::text) = ${value})`,
  // ->> gives a number member as numeric's text, which is always numeric-looking (numeric
  // never prints an exponent, and jsonb holds no NaN or infinity), a string member as its
  // text, and true, false, objects and arrays as text that is not: so the text alone
  // decides, without asking the member's type.
  jsonObjectKeys: (column, alias) => sql`jsonb_object_keys(${column}) as ${sql.id(alias)}(key)`,
  jsonMemberNumber: (column, key) => pgTextNumber(sql`(${column} ->> ${key}::text)`),
  textNumber: (text) => pgTextNumber(text),
  contains: (haystack, needle) => postgresFoldedMatch(haystack, needle, 'contains'),
  startsWith: (haystack, prefix) => postgresFoldedMatch(haystack, prefix, 'startsWith'),
  analyze: (table) => sql`analyze ${sql.table(table)}`,
  // SKIP_LOCKED: a VACUUM of the table already running (another node's, autovacuum's) is enough.
  reclaimSpace: (tables) => sql`vacuum (analyze, skip_locked) ${sql.join(tables.map((table) => sql.table(table)))}`,
  // Values handed to transactions still running count too: they may yet commit.
  lastIssuedId: (table) => sql<number | null>`pg_sequence_last_value(pg_get_serial_sequence(${table}, 'id')::regclass)`,
  rowsTable: (alias, types, rows) => {
    const columns = types.map((type, i) => sql.raw(`(e ->> ${i})::${type} as column${i + 1}`))
    return sql`(select ${sql.join(columns)} from jsonb_array_elements(${rowsJson(rows)}::jsonb) as e) as ${sql.ref(alias)}`
  },
}
