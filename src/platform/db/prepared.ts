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
 * SQL texts run as named statements and the name each goes by on a PostgreSQL connection.
 * Those of prepared queries and executeNamed are few and fixed by the code, and keep
 * their names; any other text that keeps coming back (repeatedText) is named too, up to
 * MAX_REPEATED_TEXTS, the least recently run giving its name up past that. A connection
 * keeps each statement it has parsed until it is closed, so a name given up is closed on
 * each connection the next time that connection runs a named statement (pg-named.ts).
 * Names are never used twice.
 */
const statementNames = new Map<string, string>()
/** Repeated texts and their names, least recently run first. */
const repeatedNames = new Map<string, string>()
let namesGiven = 0
let namesGivenUp = 0

/** Prepared queries' texts beyond this run unnamed (a guard: the code has a few dozen). */
const MAX_PREPARED_TEXTS = 256
/**
 * Repeated texts named at once: far above those the code runs again and again (a few
 * dozen, and a batch statement once for each size that comes back), and what a
 * connection pooler must be able to keep per connection.
 */
export const MAX_REPEATED_TEXTS = 256

/** A text run this many times is named from then on. */
const RUNS_BEFORE_NAMED = 3
/** Texts counted towards RUNS_BEFORE_NAMED, at most: the count starts over past it. */
const MAX_COUNTED_TEXTS = 1_000
/** Longer texts (a bulk insert's) are never counted: the counts stay under 16 MB. */
const MAX_COUNTED_LENGTH = 16_384
const runsOf = new Map<string, number>()
// Only statements PostgreSQL can prepare: not BEGIN, COMMIT, SET or VACUUM.
const PREPARABLE = /^\s*(select|insert|update|delete|with|values)\b/i

/** What every name starts with: a connection closes only statements of such names. */
export const NAME_PREFIX = 'prepared_'

const newName = (): string => `${NAME_PREFIX}${++namesGiven}`

/** The name `text` goes by from now on; undefined once MAX_PREPARED_TEXTS are named. */
function nameStatement(text: string): string | undefined {
  let name = statementNames.get(text)
  if (name === undefined && statementNames.size < MAX_PREPARED_TEXTS) {
    name = repeatedNames.get(text) ?? newName()
    repeatedNames.delete(text)
    statementNames.set(text, name)
  }
  return name
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
 * (PostgreSQL's extended protocol): undefined for a text that is not named.
 */
export function statementName(text: string): string | undefined {
  return statementNames.get(text) ?? repeatedNames.get(text)
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
  const prepared = statementNames.get(text)
  if (prepared !== undefined) return prepared
  const repeated = repeatedNames.get(text)
  if (repeated !== undefined) {
    // Last in the map: the most recently run.
    repeatedNames.delete(text)
    repeatedNames.set(text, repeated)
    return repeated
  }
  if (text.length > MAX_COUNTED_LENGTH || !PREPARABLE.test(text)) return undefined
  const runs = (runsOf.get(text) ?? 0) + 1
  if (runs < RUNS_BEFORE_NAMED) {
    if (runsOf.size >= MAX_COUNTED_TEXTS) runsOf.clear()
    runsOf.set(text, runs)
    return undefined
  }
  runsOf.delete(text)
  if (repeatedNames.size >= MAX_REPEATED_TEXTS) {
    const [leastRecent] = repeatedNames.keys()
    repeatedNames.delete(leastRecent!)
    namesGivenUp++
  }
  const name = newName()
  repeatedNames.set(text, name)
  return name
}

/** How many names have been given up so far: a connection that has seen as many has nothing to close. */
export function namesGivenUpSoFar(): number {
  return namesGivenUp
}
