/**
 * Audience benchmark: CSV import rate, live segment counts beside a bare SQL floor, and
 * the p95 of listing 100 segments, on a generated million contacts.
 *
 *   npm run bench:audience                      # SQLite
 *   npm run bench:audience -- --store postgres  # PostgreSQL (BENCH_DATABASE_URL or the local server)
 *   flags: --contacts N (1000000), --import-runs N (3), --count-runs N (5),
 *          --only import (skip the list, the counts and the listing),
 *          --commit REV (build src/ of that commit, read with git archive), --entry FILE (a compiled main.js as it is),
 *          --node-arg ARG (repeatable; e.g. --cpu-prof)
 */
import { createReadStream, mkdtempSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { flag, parseFlags } from '../lib/flags.js'
import { createFreshDatabase, type FreshDatabase } from '../lib/postgres.js'
import { PROJECT_DIR, buildCommit, buildServer, processCpuSeconds, startServer, type RunningServer } from '../lib/server.js'
import { compareWithFloor, openFloor } from './floor.js'
import { generateContactsCsv, phoneNumber } from './generate.js'
import { benchSegments } from './segments.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  contacts: flag.number(1_000_000),
  'import-runs': flag.number(3),
  'count-runs': flag.number(5),
  only: flag.string(),
  commit: flag.string(),
  entry: flag.string(),
  'node-arg': flag.list(),
})
const store = flags.store as 'sqlite' | 'postgres'
/** The import targets, contacts/s at a million rows. */
const IMPORT_TARGET = { sqlite: 50_000, postgres: 30_000 }
const contacts = flags.contacts
const importRuns = flags['import-runs']
const countRuns = flags['count-runs']
if (flags.only !== undefined && flags.only !== 'import') throw new Error(`--only takes "import", not ${flags.only}`)
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const LIST_MEMBERS = Math.min(100_000, Math.floor(contacts / 10))

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!
const ms = (x: number) => `${x.toFixed(1)} ms`

interface Session {
  server: RunningServer
  key: string
  accountId: string
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }
  fresh?: FreshDatabase
}

async function api(session: Pick<Session, 'server' | 'key'>, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(session.server.url + path, {
    method,
    headers: { authorization: `Bearer ${session.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

async function openSession(entry: string): Promise<Session> {
  let database: Session['database']
  let fresh: FreshDatabase | undefined
  if (store === 'postgres') {
    fresh = await createFreshDatabase(ADMIN_URL, 'bench_audience')
    database = { kind: 'postgres', url: fresh.url }
  } else {
    database = { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'bench-audience-')), 'bench.db') }
  }
  const server = await startServer({
    mode: 'dist',
    entry,
    nodeArgs: flags['node-arg'],
    env: {
      DATABASE_URL: database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url,
      JWT_SECRET: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      IMPORT_MAX_BYTES: String(4 * 1024 ** 3),
    },
  })
  const email = `bench-${Date.now()}@example.com`
  const password = 'bench password 0123'
  const post = (path: string, body: unknown, token?: string) =>
    fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) }).then((r) => r.json())
  const { accountId } = (await post('/v1/auth/signup', { email, password })) as { accountId: string }
  const { token } = (await post('/v1/auth/login', { email, password })) as { token: string }
  const key = (await post('/v1/keys', { name: 'bench' }, token)) as string
  return { server, key, accountId, database, ...(fresh ? { fresh } : {}) }
}

async function closeSession(session: Session): Promise<void> {
  await session.server.stop()
  await session.fresh?.drop()
}

/**
 * Uploads the CSV as a stream and waits for the import to finish; returns the elapsed
 * seconds, the server's CPU seconds (every thread) meanwhile, and the import.
 */
async function importFile(session: Session, path: string, query = ''): Promise<{ seconds: number; cpuSeconds: number; result: any }> {
  const started = performance.now()
  const cpuBefore = processCpuSeconds(session.server.pid) ?? NaN
  const response = await fetch(`${session.server.url}/v1/contacts/import${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.key}`, 'content-type': 'text/csv' },
    body: Readable.toWeb(createReadStream(path)) as ReadableStream,
    duplex: 'half',
  } as RequestInit)
  const { importId } = (await response.json()) as { importId: string }
  for (;;) {
    const result = await api(session, 'GET', `/v1/contacts/imports/${importId}`)
    if (result.status !== 'processing') {
      return { seconds: (performance.now() - started) / 1000, cpuSeconds: (processCpuSeconds(session.server.pid) ?? NaN) - cpuBefore, result }
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

function build(): { entry: string; code: string } {
  if (flags.entry) return { entry: resolve(flags.entry), code: `${flags.entry} as given` }
  if (flags.commit) {
    const { entry, sha } = buildCommit(flags.commit)
    return { entry, code: `commit ${sha}` }
  }
  // A folder of its own: other benchmarks may be building .bench/dist at the same time.
  return { entry: buildServer('bench-audience/dist'), code: 'the working tree' }
}

async function main(): Promise<void> {
  console.log(`audience benchmark: ${contacts.toLocaleString('en')} contacts on ${store}, Node ${process.version}`)
  const csv = await generateContactsCsv(resolve(PROJECT_DIR, '.bench', `contacts-${contacts}.csv`), contacts)
  console.log(`CSV: ${csv} (${(statSync(csv).size / 1024 ** 2).toFixed(0)} MiB)`)
  const { entry, code } = build()
  console.log(`code: ${code}`)

  // 1. Import rate: each run into a fresh store, then the same file again into that store
  // (every row already a contact).
  const rates: number[] = []
  const repeatRates: number[] = []
  let session: Session | undefined
  for (let run = 1; run <= importRuns; run++) {
    if (session) await closeSession(session)
    session = await openSession(entry)
    const { seconds, cpuSeconds, result } = await importFile(session, csv)
    if (result.status !== 'completed' || result.created !== contacts) throw new Error(`import ${run} ended ${JSON.stringify({ ...result, errors: result.errors.slice(0, 3) })}`)
    rates.push(contacts / seconds)
    const load = () => `load average ${loadavg()[0]!.toFixed(1)}`
    console.log(`import run ${run}: ${seconds.toFixed(1)} s, ${Math.round(contacts / seconds).toLocaleString('en')} contacts/s, server CPU ${cpuSeconds.toFixed(1)} s, ${load()}`)
    const again = await importFile(session, csv)
    if (again.result.status !== 'completed' || again.result.existing !== contacts) throw new Error(`repeated import ${run} ended ${JSON.stringify({ ...again.result, errors: again.result.errors.slice(0, 3) })}`)
    repeatRates.push(contacts / again.seconds)
    console.log(
      `repeated import run ${run} (every row existing): ${again.seconds.toFixed(1)} s, ${Math.round(contacts / again.seconds).toLocaleString('en')} contacts/s, server CPU ${again.cpuSeconds.toFixed(1)} s, ${load()}`,
    )
  }
  const s = session!
  const importSummary = () =>
    console.log(
      `\nImport: median ${Math.round(median(rates)).toLocaleString('en')} contacts/s over ${importRuns} runs (${rates.map((r) => Math.round(r).toLocaleString('en')).join(', ')}); ` +
        `repeated: median ${Math.round(median(repeatRates)).toLocaleString('en')} (${repeatRates.map((r) => Math.round(r).toLocaleString('en')).join(', ')}); ` +
        `target ${IMPORT_TARGET[store].toLocaleString('en')}/s on ${store} (ratio ${(median(rates) / IMPORT_TARGET[store]).toFixed(2)}), repeated at least as fast; ` +
        `listmonk reports ~10,000/s: ratio ${(median(rates) / 10_000).toFixed(1)}x`,
    )
  if (flags.only === 'import') {
    importSummary()
    await closeSession(s)
    return
  }

  // A list of the first LIST_MEMBERS contacts, filled by a second import with contactListId.
  const listId = (await api(s, 'POST', '/v1/contact-lists', { name: 'bench list' })) as string
  const listCsv = join(mkdtempSync(join(tmpdir(), 'bench-list-')), 'list.csv')
  {
    const { writeFileSync } = await import('node:fs')
    writeFileSync(listCsv, 'phoneNumber\n' + Array.from({ length: LIST_MEMBERS }, (_, i) => phoneNumber(i)).join('\n') + '\n')
  }
  const listImport = await importFile(s, listCsv, `?contactListId=${listId}`)
  console.log(`list of ${LIST_MEMBERS.toLocaleString('en')} members imported in ${listImport.seconds.toFixed(1)} s`)

  // 2. Live counts beside the floor.
  const floor = openFloor(s.database, listId)
  const rows: string[] = []
  const castOnly: string[] = []
  for (const [name, ruleSet] of Object.entries(benchSegments(listId))) {
    const c = await compareWithFloor(floor, name, s.accountId, countRuns, async () => {
      const body = { rulesOperator: ruleSet.operator, rules: JSON.stringify(ruleSet.rules) }
      return (await api(s, 'POST', '/v1/audience/segments/preview?limit=0', body)).count
    })
    const check = c.platformCount === c.floorCount ? '' : `  COUNT MISMATCH (floor ${c.floorCount})`
    if (c.castMs !== undefined) castOnly.push(`${name} ${ms(c.castMs)} (platform ÷ it ${(c.platformMs / c.castMs).toFixed(2)})`)
    rows.push(
      `| ${name} | ${c.platformCount.toLocaleString('en')} | ${ms(c.platformMs)} | ${ms(c.floorMs)} | ${(c.platformMs / c.floorMs).toFixed(2)} | ${c.platformMs < 1000 ? 'yes' : 'NO'} |${check}`,
    )
  }
  await floor.close()
  console.log('\nLive counts (POST /v1/audience/segments/preview?limit=0 over HTTP, median of ' + countRuns + ' runs) beside a bare SQL count:')
  console.log('| segment | matches | platform | bare SQL floor | ratio | under 1 s |')
  console.log('|---|---|---|---|---|---|')
  for (const row of rows) console.log(row)
  console.log(`Bare casts without the numeric-text test (not correct queries; floor.ts): ${castOnly.join(', ')}`)

  // 3. Listing 100 segments with their cached counts.
  const ruleSets = Object.values(benchSegments(listId))
  for (let i = 0; i < 100; i++) {
    const r = ruleSets[i % ruleSets.length]!
    await api(s, 'POST', '/v1/audience/segments', { name: `segment ${i}`, rulesOperator: r.operator, rules: JSON.stringify(r.rules) })
  }
  // Wait until the background refresher has counted all of them.
  const countingStarted = performance.now()
  for (;;) {
    const stale = await countStale(s)
    if (stale === 0) break
    await new Promise((r) => setTimeout(r, 500))
  }
  console.log(`\nbackground counts of 100 new segments ready after ${((performance.now() - countingStarted) / 1000).toFixed(1)} s`)
  const listing: number[] = []
  for (let i = 0; i < 300; i++) {
    const t = performance.now()
    const page = await api(s, 'GET', '/v1/audience/segments?pageSize=100')
    listing.push(performance.now() - t)
    if (page.items.length !== 100) throw new Error('expected 100 segments')
  }
  console.log(`GET /v1/audience/segments?pageSize=100 (100 segments, 300 sequential requests): p50 ${ms(percentile(listing, 50))}, p95 ${ms(percentile(listing, 95))}, p99 ${ms(percentile(listing, 99))} (target p95 < 50 ms: ${percentile(listing, 95) < 50 ? 'PASS' : 'BELOW TARGET'})`)

  importSummary()
  await closeSession(s)
}

/** Segments whose cached count is missing or stale, read through the listing: a live count there is slow, a cached one is not. */
async function countStale(s: Session): Promise<number> {
  if (s.database.kind === 'sqlite') {
    const { default: SQLite } = await import('../../src/platform/db/sqlite-binding.js')
    const db = new SQLite(s.database.path, { readonly: true })
    try {
      return Number((db.prepare('select count(*) n from segments where count_version <> counted_version').get() as { n: number }).n)
    } finally {
      db.close()
    }
  }
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: s.database.url })
  await client.connect()
  try {
    return Number((await client.query('select count(*) n from segments where count_version <> counted_version')).rows[0].n)
  } finally {
    await client.end()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
