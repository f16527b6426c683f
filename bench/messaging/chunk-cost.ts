/**
 * What queueing a broadcast in chunks costs by itself, without a server: on copies of
 * bench:messaging's prepared SQLite store (run it once first), the floor's one
 * INSERT … SELECT (floor.ts) against the same rows queued the way the server walks them,
 * a last-contact read and an INSERT … SELECT per chunk of contacts, each chunk its own
 * transaction or all in one; and the count of the audience that the send makes before
 * it takes the credits, with the floor's hand-written predicate and with the segment's
 * rules as the server compiles them.
 *
 *   npx tsx bench/messaging/chunk-cost.ts [--rounds 3] [--contacts 1000000]
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Kysely, SqliteDialect } from 'kysely'
import SQLite from '../../src/platform/db/sqlite-binding.js'
import { sqliteDialect } from '../../src/platform/db/dialect.js'
import { compileRuleSet, type Rule } from '../../src/modules/audience/index.js'
import { SEGMENT } from './contacts.js'
import { FLOOR_AUDIENCE, floorInsertSql, floorSqlite, openForFloor } from './floor.js'

const { values: flags } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, contacts: { type: 'string', default: '1000000' } } })
const rounds = Number(flags.rounds)
const STORES = '.bench/messaging/stores'
const store = readdirSync(STORES)
  .filter((name) => name.startsWith(`sqlite-${flags.contacts}-`) && name.endsWith('.db'))
  .map((name) => join(STORES, name))
  .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
if (!store) throw new Error(`no prepared store of ${flags.contacts} contacts in ${STORES}: run npm run bench:messaging first`)
const { senderAccountId: account } = JSON.parse(readFileSync(store.replace(/\.db$/, '.json'), 'utf8')) as { senderAccountId: string }

// The floor's predicate (floor.ts), and the segment's rules as the server compiles them.
const compiled = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) })
  .selectFrom('contacts')
  .select('id')
  .where(compileRuleSet(sqliteDialect, { operator: SEGMENT.rulesOperator, rules: SEGMENT.rules as Rule[] }))
  .compile()
const SERVER = { sql: compiled.sql.slice(compiled.sql.indexOf(' where ') + ' where '.length), parameters: compiled.parameters }
const RECIPIENTS = floorInsertSql()

/** A copy of the store: its path, and how to remove it. */
function copy() {
  const dir = mkdtempSync(join(tmpdir(), 'chunk-cost-'))
  const path = join(dir, 'store.db')
  copyFileSync(store!, path)
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

function floor(): number {
  const { path, remove } = copy()
  try {
    return floorSqlite(path, account).seconds
  } finally {
    remove()
  }
}

interface Chunked {
  seconds: number
  lastReads: number
  inserts: number
  commits: number
}

/** The walk of broadcasts/queue.ts with the floor's predicate: chunks of `first` contacts doubling up to `largest`. */
function chunked(first: number, largest: number, oneTransaction: boolean): Chunked {
  const { path, remove } = copy()
  const { db, head } = openForFloor(path, account)
  const lastOf = db.prepare(`select created_at, id from contacts where account_id = ? and (created_at, id) > (?, ?) order by created_at, id limit 1 offset ?`)
  const upTo = db.prepare(`${RECIPIENTS} and (created_at, id) > (?, ?) and (created_at, id) <= (?, ?)`)
  const rest = db.prepare(`${RECIPIENTS} and (created_at, id) > (?, ?)`)
  const spent = { lastReads: 0, inserts: 0, commits: 0 }
  const timed = <T>(part: keyof typeof spent, work: () => T): T => {
    const started = performance.now()
    try {
      return work()
    } finally {
      spent[part] += (performance.now() - started) / 1000
    }
  }
  let after = { created_at: '', id: '' }
  const started = performance.now()
  if (oneTransaction) db.exec('begin immediate')
  for (let size = first; ; size = Math.min(largest, size * 2)) {
    const last = timed('lastReads', () => lastOf.get(account, after.created_at, after.id, size - 1) as typeof after | undefined)
    if (!oneTransaction) db.exec('begin immediate')
    timed('inserts', () => (last ? upTo.run(...head, after.created_at, after.id, last.created_at, last.id) : rest.run(...head, after.created_at, after.id)))
    if (!oneTransaction) timed('commits', () => db.exec('commit'))
    if (!last) break
    after = last
  }
  if (oneTransaction) db.exec('commit')
  const seconds = (performance.now() - started) / 1000
  db.close()
  remove()
  return { seconds, ...spent }
}

function count(predicate: string, parameters: readonly unknown[]): number {
  const db = new SQLite(store!, { readonly: true })
  try {
    const started = performance.now()
    db.prepare(`select count(*) from contacts where account_id = ? and opted_out = 0 and ${predicate}`).pluck().get(account, ...parameters)
    return (performance.now() - started) / 1000
  } finally {
    db.close()
  }
}

const s = (seconds: number) => `${seconds.toFixed(2)} s`
console.log(`chunk cost on copies of ${store}, ${rounds} rounds`)
for (let round = 1; round <= rounds; round++) {
  const base = floor()
  const show = (name: string, c: Chunked) =>
    `  ${name}: ${s(c.seconds)} (÷ floor ${(c.seconds / base).toFixed(2)}; last-contact reads ${s(c.lastReads)}, inserts ${s(c.inserts)}, commits ${s(c.commits)})`
  console.log(`round ${round}: floor ${s(base)}`)
  console.log(show('chunks of 2,000 to 4,000, a transaction each (the server)', chunked(2_000, 4_000, false)))
  console.log(show('the same chunks in one transaction', chunked(2_000, 4_000, true)))
  console.log(show('chunks of 8,000, a transaction each', chunked(8_000, 8_000, false)))
  console.log(`  the audience count: the floor's predicate ${s(count(FLOOR_AUDIENCE, []))}, the segment's rules as compiled ${s(count(SERVER.sql, SERVER.parameters))}`)
}
