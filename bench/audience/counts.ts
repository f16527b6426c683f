/**
 * Count-only loop for the live segment counts of bench:audience: the platform's compiled
 * count (the query POST /v1/audience/segments/preview runs, without HTTP) beside the bare
 * SQL floor (floor.ts), on a million-contact database built once and kept, so a change
 * to the compiled SQL is measured in seconds instead of a fresh import.
 *
 *   npx tsx bench/audience/counts.ts prepare --store sqlite|postgres   # import once, into .bench/
 *   npx tsx bench/audience/counts.ts time --store sqlite|postgres [--runs 5] [--only and5,or5] [--sql]
 *   npx tsx bench/audience/counts.ts drop --store postgres             # drop the kept database
 */
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { Readable } from 'node:stream'
import SQLite from '../../src/platform/db/sqlite-binding.js'
import { Kysely, PostgresDialect, SqliteDialect, type Compilable } from 'kysely'
import pg from 'pg'
import { postgresDialect, sqliteDialect } from '../../src/platform/db/dialect.js'
// countAudience: the count with the opted-out split that POST /v1/audience/segments/preview runs.
import { compileRuleSet, countAudience } from '../../src/modules/audience/index.js'
import { benchSegments } from './segments.js'
import { compareWithFloor, openFloor } from './floor.js'
import { generateContactsCsv, phoneNumber } from './generate.js'
import { flag, parseFlags } from '../lib/flags.js'
import { withClient } from '../lib/postgres.js'
import { PROJECT_DIR, buildServer, startServer } from '../lib/server.js'

const { positionals, flags } = parseFlags(
  {
    store: flag.string('sqlite'),
    contacts: flag.number(1_000_000),
    runs: flag.number(5),
    only: flag.string(),
    sql: flag.boolean(),
  },
  { positionals: true },
)
const store = flags.store as 'sqlite' | 'postgres'
const contacts = flags.contacts
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const PG_NAME = 'bench_audience_counts'
const META = resolve(PROJECT_DIR, '.bench', `audience-counts-${store}.json`)
const SQLITE_PATH = resolve(PROJECT_DIR, '.bench', 'audience-counts.db')

interface Meta {
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }
  accountId: string
  listId: string
}

async function prepare(): Promise<void> {
  const csv = await generateContactsCsv(resolve(PROJECT_DIR, '.bench', `contacts-${contacts}.csv`), contacts)
  let database: Meta['database']
  if (store === 'postgres') {
    await withClient(ADMIN_URL, async (client) => {
      await client.query(`drop database if exists "${PG_NAME}" with (force)`)
      await client.query(`create database "${PG_NAME}"`)
    })
    const url = new URL(ADMIN_URL)
    url.pathname = `/${PG_NAME}`
    database = { kind: 'postgres', url: url.toString() }
  } else {
    mkdirSync(resolve(PROJECT_DIR, '.bench'), { recursive: true })
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(SQLITE_PATH + suffix)) rmSync(SQLITE_PATH + suffix)
    database = { kind: 'sqlite', path: SQLITE_PATH }
  }
  const server = await startServer({
    mode: 'dist',
    entry: buildServer(),
    env: {
      DATABASE_URL: database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url,
      JWT_SECRET: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      IMPORT_MAX_BYTES: String(4 * 1024 ** 3),
    },
  })
  try {
    const post = async (path: string, body: unknown, token?: string) => {
      const response = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })
      return response.json() as Promise<any>
    }
    const email = `counts-${Date.now()}@example.com`
    const password = 'bench password 0123'
    const { accountId } = await post('/v1/auth/signup', { email, password })
    const { token } = await post('/v1/auth/login', { email, password })
    const key = (await post('/v1/keys', { name: 'bench' }, token)) as string
    const upload = async (body: Readable, query = '') => {
      const response = await fetch(`${server.url}/v1/contacts/import${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
        body: Readable.toWeb(body) as ReadableStream,
        duplex: 'half',
      } as RequestInit)
      const { importId } = (await response.json()) as { importId: string }
      for (;;) {
        const result = (await (await fetch(`${server.url}/v1/contacts/imports/${importId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any
        if (result.status !== 'processing') return result
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    const imported = await upload(createReadStream(csv))
    console.log(`imported: ${imported.status}, ${imported.created} created`)
    const listId = (await post('/v1/contact-lists', { name: 'bench list' }, key)) as string
    const members = Math.min(100_000, Math.floor(contacts / 10))
    await upload(Readable.from(['phoneNumber\n' + Array.from({ length: members }, (_, i) => phoneNumber(i)).join('\n') + '\n']), `?contactListId=${listId}`)
    writeFileSync(META, JSON.stringify({ database, accountId, listId } satisfies Meta))
    console.log(`kept: ${META}`)
  } finally {
    await server.stop()
  }
}


async function time(): Promise<void> {
  const meta = JSON.parse(readFileSync(META, 'utf8')) as Meta
  const runs = flags.runs
  let readLong: <T>(query: Compilable<T>) => Promise<T[]>
  let db: Kysely<any>
  let close: () => Promise<void>
  if (meta.database.kind === 'sqlite') {
    // The reader thread's connection (src/platform/db/sqlite-reader.ts), on this thread.
    const connection = new SQLite(meta.database.path, { readonly: true, fileMustExist: true })
    connection.pragma('cache_size = -65536')
    connection.function('ulower', { deterministic: true }, (value: unknown) => (value === null || value === undefined ? null : String(value).toLowerCase()))
    db = new Kysely({ dialect: new SqliteDialect({ database: connection }) })
    readLong = async <T>(query: Compilable<T>) => {
      const compiled = query.compile()
      return connection.prepare(compiled.sql).all(compiled.parameters as unknown[]) as T[]
    }
    close = async () => {
      connection.close()
    }
  } else {
    const pool = new pg.Pool({ connectionString: meta.database.url, max: 1 })
    db = new Kysely({ dialect: new PostgresDialect({ pool }) })
    readLong = async <T>(query: Compilable<T>) => {
      const compiled = query.compile()
      return (await pool.query(compiled.sql, compiled.parameters as unknown[])).rows as T[]
    }
    close = () => pool.end()
  }
  const dialect = meta.database.kind === 'sqlite' ? sqliteDialect : postgresDialect
  const floor = openFloor(meta.database, meta.listId)
  const only = flags.only?.split(',')
  console.log(`${store}, median of ${runs}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  console.log('| segment | matches | platform | floor | ratio |')
  console.log('|---|---:|---:|---:|---:|')
  for (const [name, ruleSet] of Object.entries(benchSegments(meta.listId))) {
    if (only && !only.includes(name)) continue
    const predicate = compileRuleSet(dialect, ruleSet)
    if (flags.sql) console.log(predicate.compile(db).sql)
    const c = await compareWithFloor(floor, name, meta.accountId, runs, async () => (await countAudience({ db, readLong }, meta.accountId, predicate)).recipients)
    const check = c.platformCount === c.floorCount ? '' : ` COUNT MISMATCH (floor ${c.floorCount})`
    const cast = c.castMs === undefined ? '' : ` bare cast (not a correct query) ${c.castMs.toFixed(0)} ms, platform ÷ it ${(c.platformMs / c.castMs).toFixed(2)}`
    console.log(`| ${name} | ${c.platformCount} | ${c.platformMs.toFixed(0)} ms | ${c.floorMs.toFixed(0)} ms | ${(c.platformMs / c.floorMs).toFixed(2)} |${check}${cast}`)
  }
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  await floor.close()
  await close()
}

const command = positionals[0]
const run = command === 'prepare' ? prepare() : command === 'time' ? time() : command === 'drop' ? withClient(ADMIN_URL, (c) => c.query(`drop database if exists "${PG_NAME}" with (force)`)).then(() => undefined) : Promise.reject(new Error('usage: counts.ts prepare|time|drop --store sqlite|postgres'))
run.catch((err) => {
  console.error(err)
  process.exit(1)
})
