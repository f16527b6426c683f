/**
 * The SQLite binding for the running Node.js line, the one place that loads it.
 *
 * better-sqlite3 12 and older are built on node::ObjectWrap. On Node.js 24 their
 * statement destructor removes an environment cleanup hook with no environment at hand
 * when a statement is finalized during garbage collection or a worker thread's teardown,
 * and the process aborts ("Assertion failed: (env) != nullptr"); Node.js 20, 22 and 26
 * do not. better-sqlite3 13 is built on Node-API and does not abort, but it needs
 * Node.js 22, crashes on 20, and costs more per statement (rows are built in JavaScript,
 * prepare takes about twice as long). So both are dependencies: `better-sqlite3` (12)
 * always, `better-sqlite3-napi` (an npm alias of 13) as an optional one with
 * `engines: >=22`, which npm skips on Node.js 20. This module loads 12 on the lines it
 * is known to run on (20, 22, 26) and 13 on any other (24, and lines not tested yet).
 * The two have the same JavaScript API; the types are those of 12 (@types/better-sqlite3).
 */
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

const require = createRequire(import.meta.url)

const NODE_MAJOR = Number(process.versions.node.split('.')[0])

/** Lines better-sqlite3 12 runs on without aborting (src/platform/db/sqlite-binding.test.ts checks it). */
export const OBJECT_WRAP_LINES: readonly number[] = [20, 22, 26]

/** The package name the running Node.js line loads. */
export const SQLITE_PACKAGE = OBJECT_WRAP_LINES.includes(NODE_MAJOR) ? 'better-sqlite3' : 'better-sqlite3-napi'

function load(): typeof BetterSqlite3 {
  try {
    return require(SQLITE_PACKAGE) as typeof BetterSqlite3
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_DLOPEN_FAILED') {
      throw new Error(
        `${SQLITE_PACKAGE} could not be loaded on Node.js ${process.versions.node}: ` +
          `the dependencies were installed by another Node.js line. Run \`npm install\` (or \`npm ci\`) with this one.`,
        { cause: err },
      )
    }
    throw err
  }
}

const HAS_LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const LONE_SURROGATES = new RegExp(HAS_LONE_SURROGATE.source, 'g')

const SQLite = load()
bindStringsWellFormed(SQLite)

/**
 * A string holding a lone surrogate has no UTF-8 form. PostgreSQL's driver sends it as
 * U+FFFD; better-sqlite3 writes bytes that are not UTF-8, which 12 and 13 read back
 * differently (and json_each makes of the same string's JSON escape something else
 * again). So string parameters are made well-formed first: one U+FFFD on every store and
 * every Node.js line.
 */
function bindStringsWellFormed(binding: typeof BetterSqlite3): void {
  const probe = new binding(':memory:')
  const statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...args: unknown[]) => unknown>
  probe.close()
  for (const method of ['run', 'get', 'all', 'iterate', 'bind']) {
    const original = statement[method]
    if (typeof original !== 'function') continue
    statement[method] = function (this: unknown, ...args: unknown[]) {
      return original.apply(this, args.map(wellFormed))
    }
  }
}

function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return HAS_LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATES, '\uFFFD') : value
  if (Array.isArray(value)) return value.map(wellFormed)
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, wellFormed(v)]))
  }
  return value
}

// The constructor as a value and its types under one name, as `import SQLite from 'better-sqlite3'` gives them.
declare namespace SQLite {
  type Database = BetterSqlite3.Database
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>
  type Options = BetterSqlite3.Options
}

export default SQLite
