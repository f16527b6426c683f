/**
 * bench:stats — GET /v1/stats/messages over 90 days of rollups worth 10,000,000 recipients.
 *
 * Per run, on a fresh store: the compiled server migrates it and signs up the account; then
 * the rollups (message_stats, message_error_stats) are written straight into the store as
 * months of traffic would have left them (data.ts): for the account, --recipients
 * recipients over --days days, a tenth in single sends spread over every 15-minute bucket
 * with a daily rhythm and three carrier connections, the rest in two broadcasts a day, each
 * queued at once and handed over and delivered over the next hour and a half; plus
 * --noise-accounts other accounts with the same shape of traffic, whose rows sit between
 * the account's in the primary key. The server is started again on that store, and each
 * query is sent by autocannon for --duration s at each of --connections, after a warm-up:
 *
 *   90 days daily        from=now-90d to=now interval=day            (the target: p95 < 50 ms)
 *   7 days hourly        from=now-7d  to=now interval=hour
 *   90 days in Kolkata   the first, timeZone=Asia/Kolkata (days start at 18:30 UTC)
 *   one broadcast        7 days hourly of one broadcast (its own index)
 *   top errors           GET /v1/stats/errors over the 90 days
 *
 * Latency percentiles are of every response (autocannon's `response` event), not of its
 * per-second samples. Before measuring, the 90-day series is checked against what was
 * written: every recipient queued, in both zones.
 *
 *   npm run bench:stats                                    # SQLite, a temporary file
 *   npm run bench:stats -- --store postgres                # a fresh database on 127.0.0.1:5432 (BENCH_DATABASE_URL), dropped after
 *
 * Flags: --recipients 10000000  --days 90  --noise-accounts 20  --duration 10  --connections 1,4
 *        --warmup 2 (seconds per query)  --commit REV | --entry FILE (else the working tree's src/)
 *        --json FILE  --keep (leave the store in place and print where it is)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { flag, parseFlags, positiveInteger } from '../lib/flags.js'
import { createFreshDatabase, serverVersion } from '../lib/postgres.js'
import { buildServer, startServer, type RunningServer } from '../lib/server.js'
import { buildCommit } from '../messaging/build.js'
import { generateRollups, type Generated } from './data.js'
import { writePostgres, writeSqlite } from './store.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  recipients: flag.string('10000000'),
  days: flag.string('90'),
  'noise-accounts': flag.string('20'),
  duration: flag.string('10'),
  connections: flag.string('1,4'),
  warmup: flag.number(2),
  commit: flag.string(),
  entry: flag.string(),
  json: flag.string(),
  keep: flag.boolean(),
})

const store = flags.store
if (store !== 'sqlite' && store !== 'postgres') {
  console.error(`--store must be sqlite or postgres, got "${store}"`)
  process.exit(2)
}
const recipients = positiveInteger('recipients', flags.recipients)
const days = positiveInteger('days', flags.days)
const noiseAccounts = Number(flags['noise-accounts'])
const durationS = positiveInteger('duration', flags.duration)
const connectionCounts = flags.connections.split(',').map((c) => positiveInteger('connections', c))
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const JWT_SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const TARGET_P95_MS = 50
const DAY_MS = 86_400_000

const log = (message: string) => process.stderr.write(`${message}\n`)

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`POST ${url}: ${response.status} ${text}`)
  return JSON.parse(text)
}

/** Signs up the account through the API; answers its id, a Full key and a broadcast of it (a draft: the rollups say what it sent). */
async function signUp(base: string): Promise<{ accountId: string; key: string; broadcastId: string }> {
  const email = `stats-${Date.now()}@example.com`
  const password = 'bench password 0123'
  const { accountId } = await post(`${base}/v1/auth/signup`, { email, password, accountName: 'Stats' })
  const { token } = await post(`${base}/v1/auth/login`, { email, password })
  const key = (await post(`${base}/v1/keys`, { name: 'bench', permission: 'Full' }, token)) as string
  const listId = (await post(`${base}/v1/contact-lists`, { name: 'Everyone' }, key)) as string
  const broadcastId = (await post(`${base}/v1/broadcasts`, { name: 'Last', message: 'Sale today', senderId: 'Acme', contactListId: listId }, key)) as string
  return { accountId, key, broadcastId }
}

interface Query {
  name: string
  path: string
}

interface Figures {
  query: string
  connections: number
  intervals: number
  requests: number
  requestsPerSecond: number
  p50: number
  p95: number
  p99: number
  max: number
  failures: number
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** autocannon on one path for `seconds`; every response's latency kept. */
async function load(base: string, key: string, path: string, connections: number, seconds: number): Promise<{ latencies: number[]; failures: number; durationS: number }> {
  const latencies: number[] = []
  let failures = 0
  const instance = autocannon({ url: base + path, headers: { authorization: `Bearer ${key}` }, connections, duration: seconds, timeout: 10 })
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode === 200) latencies.push(responseTime)
    else failures++
  })
  const result = await instance
  return { latencies, failures: failures + result.errors + result.timeouts, durationS: result.duration }
}

async function measureQuery(base: string, key: string, query: Query, connections: number): Promise<Figures> {
  const first = await fetch(base + query.path, { headers: { authorization: `Bearer ${key}` } })
  const body = (await first.json()) as { series?: unknown[]; items?: unknown[] }
  if (first.status !== 200) throw new Error(`${query.name}: ${first.status} ${JSON.stringify(body)}`)
  if (flags.warmup > 0) await load(base, key, query.path, connections, flags.warmup)
  const { latencies, failures, durationS: elapsedS } = await load(base, key, query.path, connections, durationS)
  const sorted = latencies.sort((a, b) => a - b)
  return {
    query: query.name,
    connections,
    intervals: body.series?.length ?? body.items?.length ?? 0,
    requests: sorted.length,
    requestsPerSecond: sorted.length / elapsedS,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    failures,
  }
}

/** The 90-day series must hold what was written, in UTC and in Kolkata alike. */
async function check(base: string, key: string, data: Generated): Promise<void> {
  for (const timeZone of ['UTC', 'Asia/Kolkata']) {
    const from = new Date(data.from - DAY_MS).toISOString()
    const to = new Date(data.to + DAY_MS).toISOString()
    const response = await fetch(`${base}/v1/stats/messages?from=${from}&to=${to}&interval=day&timeZone=${timeZone}`, { headers: { authorization: `Bearer ${key}` } })
    const body = (await response.json()) as { series: { queued: number; sent: number; delivered: number; failed: number; credits: number }[] }
    const sum = (field: 'queued' | 'sent' | 'delivered' | 'failed' | 'credits') => body.series.reduce((total, s) => total + s[field], 0)
    const got = { queued: sum('queued'), sent: sum('sent'), delivered: sum('delivered'), failed: sum('failed'), credits: sum('credits') }
    if (JSON.stringify(got) !== JSON.stringify(data.totals)) throw new Error(`the ${timeZone} series holds ${JSON.stringify(got)}, the store ${JSON.stringify(data.totals)}`)
  }
}

const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '-')

async function main(): Promise<void> {
  const version = store === 'postgres' ? `PostgreSQL ${await serverVersion(ADMIN_URL)} on ${new URL(ADMIN_URL).host}` : 'SQLite (better-sqlite3)'
  console.log(`stats benchmark: ${recipients.toLocaleString('en')} recipients over ${days} days, ${noiseAccounts} other accounts, on ${version}; Node ${process.version}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 1024 ** 3)} GiB`)
  const entry = flags.entry ?? (flags.commit ? buildCommit(flags.commit).entry : buildServer('stats'))
  console.log(`code: ${flags.entry ? `${flags.entry} as given` : flags.commit ? `commit ${flags.commit}` : 'the working tree'}`)

  const cleanups: (() => Promise<void> | void)[] = []
  let server: RunningServer | undefined
  try {
    let databaseUrl: string
    if (store === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'bench-stats-'))
      databaseUrl = `sqlite:${join(dir, 'stats.db')}`
      if (!flags.keep) cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    } else {
      const database = await createFreshDatabase(ADMIN_URL, 'bench_stats')
      databaseUrl = database.url
      if (!flags.keep) cleanups.push(() => database.drop())
    }
    const env = { DATABASE_URL: databaseUrl, JWT_SECRET, LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000' }
    server = await startServer({ mode: 'dist', entry, env })
    const account = await signUp(server.url)
    await server.stop()
    server = undefined

    const now = Date.now()
    const data = generateRollups({ accountId: account.accountId, lastBroadcastId: account.broadcastId, recipients, days, noiseAccounts, end: Math.floor(now / DAY_MS) * DAY_MS + DAY_MS })
    const started = performance.now()
    if (store === 'sqlite') writeSqlite(databaseUrl.slice('sqlite:'.length), data)
    else await writePostgres(databaseUrl, data)
    console.log(
      `store: ${data.accountRows.toLocaleString('en')} rollup rows of the account, ${data.noiseRows.toLocaleString('en')} of other accounts, ${data.errorRows.toLocaleString('en')} error rows; written in ${((performance.now() - started) / 1000).toFixed(1)} s${flags.keep ? ` (kept: ${databaseUrl})` : ''}`,
    )

    server = await startServer({ mode: 'dist', entry, env })
    await check(server.url, account.key, data)
    const end = new Date(data.to).toISOString()
    const ago = (n: number) => new Date(data.to - n * DAY_MS).toISOString()
    const queries: Query[] = [
      { name: '90 days daily', path: `/v1/stats/messages?from=${ago(90)}&to=${end}&interval=day` },
      { name: '7 days hourly', path: `/v1/stats/messages?from=${ago(7)}&to=${end}&interval=hour` },
      { name: '90 days daily, Asia/Kolkata', path: `/v1/stats/messages?from=${ago(90)}&to=${end}&interval=day&timeZone=Asia/Kolkata` },
      { name: 'one broadcast, 7 days hourly', path: `/v1/stats/messages?from=${ago(7)}&to=${end}&interval=hour&broadcastId=${data.lastBroadcastId}` },
      { name: 'top errors, 90 days', path: `/v1/stats/errors?from=${ago(90)}&to=${end}&limit=10` },
    ]
    const figures: Figures[] = []
    for (const connections of connectionCounts) {
      for (const query of queries) {
        const f = await measureQuery(server.url, account.key, query, connections)
        figures.push(f)
        log(`  ${query.name}, ${connections} connection(s): p95 ${ms(f.p95)} ms`)
      }
    }

    const header = ['query', 'conns', 'items', 'requests', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'failed']
    const rows = figures.map((f) => [f.query, String(f.connections), String(f.intervals), String(f.requests), f.requestsPerSecond.toFixed(0), ms(f.p50), ms(f.p95), ms(f.p99), ms(f.max), String(f.failures)])
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
    console.log(line(header))
    for (const row of rows) console.log(line(row))
    const target = figures.filter((f) => f.query === '90 days daily')
    for (const f of target) {
      const met = f.p95 < TARGET_P95_MS && f.failures === 0
      console.log(`target (90-day daily series, p95 < ${TARGET_P95_MS} ms) at ${f.connections} connection(s): ${ms(f.p95)} ms, ${met ? 'met' : 'NOT MET'}`)
      if (!met) process.exitCode = 1
    }
    if (figures.some((f) => f.failures > 0)) process.exitCode = 1
    if (flags.json) writeFileSync(flags.json, JSON.stringify({ store, recipients, days, noiseAccounts, durationS, figures }, null, 2))
  } finally {
    await server?.stop()
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
