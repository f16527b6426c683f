import type { CompiledQuery, Compilable, Kysely } from 'kysely'
import type { DB } from './schema.js'

/** A query built and compiled once per store handle, then run with new values only. */
export type PreparedQuery<P extends unknown[], O> = (db: Kysely<DB>, ...values: P) => Promise<O[]>

/**
 * Prepares a query for the hot path of a request. `build` is called once per handle with
 * placeholders for the values; later calls substitute the values into the compiled
 * parameters. Building and compiling a Kysely query tree costs more than running a short
 * statement on SQLite: this takes both off every request. Its SQL is also registered as a
 * named statement (statementName), which PostgreSQL connections parse and plan once. `build` must use each value as
 * a bound parameter only (in a comparison, not in sql.raw or a table name), and must not
 * branch on it.
 */
export function prepareQuery<P extends unknown[], O>(
  arity: P['length'],
  build: (db: Kysely<DB>, ...values: P) => Compilable<O>,
): PreparedQuery<P, O> {
  const compiled = new WeakMap<Kysely<DB>, { query: CompiledQuery<O>; slots: (number | undefined)[]; name: string | undefined }>()
  return async (db, ...values) => {
    let prepared = compiled.get(db)
    if (!prepared) {
      const placeholders = Array.from({ length: arity }, () => new Placeholder())
      const query = build(db, ...(placeholders as P)).compile()
      const slots = query.parameters.map((parameter) => (parameter instanceof Placeholder ? placeholders.indexOf(parameter) : undefined))
      const used = new Set(slots.filter((slot) => slot !== undefined))
      if (used.size !== arity) throw new Error(`prepareQuery: ${arity - used.size} of ${arity} values do not reach the SQL as parameters`)
      prepared = { query, slots, name: nameStatement(query.sql) }
      compiled.set(db, prepared)
    }
    const { query, slots, name } = prepared
    const parameters = query.parameters.map((constant, i) => (slots[i] === undefined ? constant : values[slots[i]]))
    const direct = directRunners.get(db)
    if (direct !== undefined) return direct(name, query.sql, parameters) as Promise<O[]>
    return (await db.executeQuery<O>({ ...query, parameters })).rows
  }
}

/** Runs a statement (named, unless too many texts are) with its parameters on a connection of the store's own: the rows. */
export type DirectRunner = (name: string | undefined, text: string, parameters: readonly unknown[]) => Promise<unknown[]>

const directRunners = new WeakMap<Kysely<DB>, DirectRunner>()

/**
 * Lets prepared queries on `db` (not on its transactions, which hold a connection of their
 * own) reach the store through `run` rather than through Kysely's executor, whose layers
 * of promises cost about as much as the rest of a short read on PostgreSQL.
 */
export function runPreparedQueriesDirectly(db: Kysely<DB>, run: DirectRunner): void {
  directRunners.set(db, run)
}

class Placeholder {}

/*
 * SQL texts run as named statements and the name each goes by on a PostgreSQL connection:
 * those of prepared queries and executeNamed, and any other that keeps coming back
 * (repeatedText). Every connection keeps each named statement it has seen for its whole
 * life, so the names are capped.
 */
const statementNames = new Map<string, string>()

/** Far above the texts the code runs again and again; past it, texts run unnamed. */
const MAX_NAMED_TEXTS = 256

/** A text run this many times is named from then on. */
const RUNS_BEFORE_NAMED = 3
/** Texts counted towards RUNS_BEFORE_NAMED, at most: the count starts over past it. */
const MAX_COUNTED_TEXTS = 1_000
/** Longer texts (a bulk insert's) are never counted: the counts stay under 16 MB. */
const MAX_COUNTED_LENGTH = 16_384
const runsOf = new Map<string, number>()
// Only statements PostgreSQL can prepare: not BEGIN, COMMIT, SET or VACUUM.
const PREPARABLE = /^\s*(select|insert|update|delete|with|values)\b/i

/** The name `text` goes by from now on; undefined once MAX_NAMED_TEXTS are named. */
function nameStatement(text: string): string | undefined {
  if (!statementNames.has(text) && statementNames.size < MAX_NAMED_TEXTS) statementNames.set(text, `prepared_${statementNames.size + 1}`)
  return statementNames.get(text)
}

/**
 * Runs a statement whose text is one of a few (its values all parameters) as a named
 * statement on PostgreSQL, planned once per connection rather than on every execution:
 * for a hot write whose planning costs PostgreSQL more than running it.
 */
export async function executeNamed<O>(db: Kysely<DB>, query: CompiledQuery<O>): Promise<O[]> {
  nameStatement(query.sql)
  return (await db.executeQuery<O>(query)).rows
}

/**
 * The name under which a connection prepares `text` once and then only binds and runs it
 * (PostgreSQL's extended protocol): undefined for a text that no prepared query has.
 */
export function statementName(text: string): string | undefined {
  return statementNames.get(text)
}

/**
 * The name for a text the code runs again and again (the dispatcher's claims, a
 * single send's hand-off and receipt, the pollers' reads), once it has run
 * RUNS_BEFORE_NAMED times: parsed once per connection from then on, and planned once
 * where PostgreSQL finds a plan for any values as good. For single sends, parsing and
 * planning were more than half of PostgreSQL's time (741 of 1,341 ms for 252 sends). A
 * text made for one batch's size (an IN list) is named only when that size comes back.
 */
export function repeatedText(text: string): string | undefined {
  const name = statementNames.get(text)
  if (name !== undefined || statementNames.size >= MAX_NAMED_TEXTS || text.length > MAX_COUNTED_LENGTH || !PREPARABLE.test(text)) return name
  const runs = (runsOf.get(text) ?? 0) + 1
  if (runs < RUNS_BEFORE_NAMED) {
    if (runsOf.size >= MAX_COUNTED_TEXTS) runsOf.clear()
    runsOf.set(text, runs)
    return undefined
  }
  runsOf.delete(text)
  return nameStatement(text)
}
