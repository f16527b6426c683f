/**
 * bench:import-latency — what a large CSV import does to everyone else's requests.
 *
 * Starts the compiled server, generates (once, cached in .bench/) a CSV of --rows
 * contacts, uploads it to POST /v1/contacts/import with one account's key and, from
 * the first byte of the upload until the import has completed (and --tail seconds
 * after, to catch the work that follows an import), sends GET /v1/account with the key
 * of ANOTHER account and GET /healthz every --interval ms, open loop (a slow answer does
 * not delay the next request). Prints the import's rows/s, p50/p99/max of both routes,
 * and p99 of the authed route against the target (50 ms). Inside the server,
 * bench/import-latency/loop-monitor.mjs records the event loop's delay.
 *
 *   npm run bench:import-latency                          # SQLite, a temporary file
 *   npm run bench:import-latency -- --store postgres      # a fresh database on 127.0.0.1:5432, dropped after
 *   npm run bench:import-latency -- --rows 200000 --existing 200000 --runs 3
 *
 * Flags: --rows 1000000  --existing 0 (contacts another account imports first, unmeasured)
 *        --runs 1 (each on a fresh store; medians printed)  --interval 25  --tail 3
 *        --idle 5 (seconds of the same requests before the import: the machine's own noise)
 *        --target 50  --entry FILE (run this compiled main.js instead of building)  --json FILE
 *        --node-arg ARG (repeatable; e.g. --node-arg=--cpu-prof --node-arg=--trace-gc)
 *        --loop-log FILE (keep the server's event-loop records of the last run)
 *        --wait-quiet 60 --noise 40 (before each run, wait up to 60 s for a second in which the
 *        machine is busy less than 40% of a core; the machine is shared, and every run
 *        reports the CPU that other work took during it)
 * env:   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
 */
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { generateContactsCsv } from '../audience/generate.js'
import { flag, parseFlags } from '../lib/flags.js'
import { waitQuiet } from '../lib/load.js'
import { createFreshDatabase, serverVersion, type FreshDatabase } from '../lib/postgres.js'
import { PROJECT_DIR, buildServer, machineCpuSeconds, processCpuSeconds, processesCpuSeconds, startServer, type RunningServer } from '../lib/server.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  rows: flag.number(1_000_000),
  existing: flag.number(0),
  runs: flag.number(1),
  interval: flag.number(25),
  tail: flag.number(3),
  // Kept as text: the report prints it as given.
  idle: flag.string('5'),
  'node-arg': flag.list(),
  'wait-quiet': flag.number(60),
  noise: flag.number(40),
  'loop-log': flag.string(),
  target: flag.number(50),
  entry: flag.string(),
  json: flag.string(),
})
const store = flags.store === 'postgres' ? 'postgres' : 'sqlite'
const rows = flags.rows
const existing = flags.existing
const runs = flags.runs
const intervalMs = flags.interval
const tailMs = flags.tail * 1000
const idleMs = Number(flags.idle) * 1000
const targetMs = flags.target
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const LOOP_MONITOR = pathToFileURL(resolve(PROJECT_DIR, 'bench', 'import-latency', 'loop-monitor.mjs')).href

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
/** Nearest-rank percentile. */
const percentile = (xs: number[], p: number) => (xs.length === 0 ? Number.NaN : sorted(xs)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!)
const median = (xs: number[]) => percentile(xs, 50)
const ms = (x: number) => (Number.isNaN(x) ? '-' : `${x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en')} ms`)
const int = (x: number) => Math.round(x).toLocaleString('en')

interface Probe {
  route: 'account' | 'healthz'
  /** ms since the upload began. */
  sentAt: number
  ms: number
  status: number
}

interface LoopRecord {
  t: number
  n?: number
  p50?: number
  p99?: number
  max?: number
  stall?: number
}

interface RunResult {
  rowsPerSecond: number
  importSeconds: number
  created: number
  account: { count: number; p50: number; p99: number; max: number; failed: number }
  healthz: { count: number; p50: number; p99: number; max: number; failed: number }
  /** GET /v1/account during the idle seconds before the import. */
  idle: { count: number; p50: number; p99: number; max: number; failed: number }
  loop: { max: number; worstSecondP99: number; secondsOver50: number; seconds: number }
  stalls: { atS: number; ms: number; processed: number }[]
  maxWalMiB: number | undefined
  serverCpuPct: number | undefined
  postgresCpuPct: number | undefined
  otherCpuPct: number | undefined
}

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`POST ${url}: ${response.status} ${text}`)
  return JSON.parse(text)
}

async function newAccount(server: RunningServer, name: string): Promise<string> {
  const email = `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`
  const password = 'bench password 0123'
  await post(`${server.url}/v1/auth/signup`, { email, password, accountName: name })
  const { token } = await post(`${server.url}/v1/auth/login`, { email, password })
  return (await post(`${server.url}/v1/keys`, { name: 'bench', permission: 'Full' }, token)) as string
}

async function startImport(server: RunningServer, key: string, csv: string): Promise<string> {
  const response = await fetch(`${server.url}/v1/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
    body: Readable.toWeb(createReadStream(csv)) as ReadableStream,
    duplex: 'half',
  } as RequestInit)
  const text = await response.text()
  if (response.status !== 202) throw new Error(`import upload: ${response.status} ${text}`)
  return (JSON.parse(text) as { importId: string }).importId
}

async function importStatus(server: RunningServer, key: string, importId: string): Promise<any> {
  // A stalled server may drop the connection (its headers timeout); ask again.
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(`${server.url}/v1/contacts/imports/${importId}`, { headers: { authorization: `Bearer ${key}` } })
      return await response.json()
    } catch (err) {
      if (attempt >= 10 || server.exitStatus()) throw err
    }
  }
}

async function waitForImport(server: RunningServer, key: string, importId: string, onProgress?: (status: any) => void): Promise<any> {
  for (;;) {
    const status = await importStatus(server, key, importId)
    onProgress?.(status)
    if (status.status !== 'processing') return status
    await new Promise((r) => setTimeout(r, 250))
  }
}

async function timed(url: string, key: string | undefined): Promise<{ ms: number; status: number }> {
  const started = performance.now()
  try {
    const response = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {})
    await response.arrayBuffer()
    return { ms: performance.now() - started, status: response.status }
  } catch {
    return { ms: performance.now() - started, status: 0 }
  }
}

function summary(probes: Probe[], route: Probe['route']) {
  const mine = probes.filter((p) => p.route === route)
  const latencies = mine.map((p) => p.ms)
  return { count: mine.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), failed: mine.filter((p) => p.status !== 200).length }
}

async function oneRun(run: number, entry: string, csv: string, existingCsv: string | undefined): Promise<RunResult> {
  let fresh: FreshDatabase | undefined
  let databaseUrl: string
  let sqlitePath: string | undefined
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-latency-'))
  if (store === 'postgres') {
    fresh = await createFreshDatabase(ADMIN_URL, 'bench_import_latency')
    databaseUrl = fresh.url
  } else {
    sqlitePath = join(dir, 'bench.db')
    databaseUrl = `sqlite:${sqlitePath}`
  }
  const loopFile = join(dir, 'loop.jsonl')
  const server = await startServer({
    mode: 'dist',
    entry,
    nodeArgs: ['--import', LOOP_MONITOR, ...flags['node-arg']],
    env: {
      DATABASE_URL: databaseUrl,
      JWT_SECRET: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      IMPORT_MAX_BYTES: String(4 * 1024 ** 3),
      BENCH_LOOP_MONITOR_FILE: loopFile,
    },
  })
  try {
    if (existingCsv) {
      const otherKey = await newAccount(server, 'Existing')
      const started = performance.now()
      const done = await waitForImport(server, otherKey, await startImport(server, otherKey, existingCsv))
      console.log(`  run ${run}: ${int(done.created)} existing contacts imported first in ${((performance.now() - started) / 1000).toFixed(1)} s (not measured)`)
      // Let the work that follows an import (relay, counts) finish before measuring.
      await new Promise((r) => setTimeout(r, 5000))
    }
    const importerKey = await newAccount(server, 'Importer')
    const bystanderKey = await newAccount(server, 'Bystander')
    const check = await timed(`${server.url}/v1/account`, bystanderKey)
    if (check.status !== 200) throw new Error(`GET /v1/account with the bystander's key answered ${check.status}`)

    const idleProbes: Probe[] = []
    const probes: Probe[] = []
    const pending = new Set<Promise<void>>()
    const progress: { at: number; processed: number }[] = []
    const wal: number[] = []
    let t0 = performance.now()
    let recording = idleProbes
    const send = (route: Probe['route'], url: string, key?: string) => {
      const sentAt = performance.now() - t0
      const into = recording
      const request = timed(url, key).then(({ ms, status }) => void into.push({ route, sentAt, ms, status }))
      pending.add(request)
      void request.finally(() => pending.delete(request))
    }
    const ticker = setInterval(() => {
      send('account', `${server.url}/v1/account`, bystanderKey)
      send('healthz', `${server.url}/healthz`)
    }, intervalMs)
    // The same requests with no import running: what this machine gives right now.
    await new Promise((r) => setTimeout(r, idleMs))
    recording = probes
    const cpuBefore = { server: processCpuSeconds(server.pid), pg: store === 'postgres' ? processesCpuSeconds('postgres') : undefined, machine: machineCpuSeconds(), self: process.cpuUsage() }
    t0 = performance.now()
    const wallStart = Date.now()
    const walSampler = sqlitePath
      ? setInterval(() => {
          const walPath = `${sqlitePath}-wal`
          if (existsSync(walPath)) wal.push(statSync(walPath).size)
        }, 500)
      : undefined

    const importId = await startImport(server, importerKey, csv)
    const result = await waitForImport(server, importerKey, importId, (status) => progress.push({ at: performance.now() - t0, processed: status.rowsProcessed }))
    const importMs = performance.now() - t0
    const wallEnd = Date.now()
    await new Promise((r) => setTimeout(r, tailMs))
    clearInterval(ticker)
    clearInterval(walSampler)
    await Promise.all(pending)
    const cpuAfter = { server: processCpuSeconds(server.pid), pg: store === 'postgres' ? processesCpuSeconds('postgres') : undefined, machine: machineCpuSeconds(), self: process.cpuUsage(cpuBefore.self) }
    const wallS = (performance.now() - t0) / 1000
    if (result.status !== 'completed' || result.created !== rows) {
      throw new Error(`the import ended ${JSON.stringify({ ...result, errors: result.errors?.slice(0, 3) })}`)
    }

    const loop = existsSync(loopFile)
      ? readFileSync(loopFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as LoopRecord).filter((r) => r.t >= wallStart && r.t <= wallEnd + tailMs)
      : []
    const seconds = loop.filter((r) => r.max !== undefined)
    const processedAt = (atMs: number) => progress.filter((p) => p.at <= atMs).at(-1)?.processed ?? 0
    const stalls = loop
      .filter((r) => r.stall !== undefined)
      .sort((a, b) => b.stall! - a.stall!)
      .slice(0, 8)
      .map((r) => ({ atS: Math.round((r.t - wallStart) / 100) / 10, ms: r.stall!, processed: processedAt(r.t - wallStart) }))
      .sort((a, b) => a.atS - b.atS)
    const serverS = cpuBefore.server !== undefined && cpuAfter.server !== undefined ? cpuAfter.server - cpuBefore.server : undefined
    const pgS = cpuBefore.pg !== undefined && cpuAfter.pg !== undefined ? cpuAfter.pg - cpuBefore.pg : undefined
    const machineS = cpuBefore.machine && cpuAfter.machine ? cpuAfter.machine.busy - cpuBefore.machine.busy : undefined
    const selfS = (cpuAfter.self.user + cpuAfter.self.system) / 1e6
    return {
      rowsPerSecond: rows / (importMs / 1000),
      importSeconds: importMs / 1000,
      created: result.created,
      account: summary(probes, 'account'),
      healthz: summary(probes, 'healthz'),
      idle: summary(idleProbes, 'account'),
      loop: {
        max: Math.max(0, ...seconds.map((r) => r.max!), ...loop.filter((r) => r.stall !== undefined).map((r) => r.stall!)),
        worstSecondP99: Math.max(0, ...seconds.map((r) => r.p99!)),
        secondsOver50: seconds.filter((r) => r.max! > 50).length,
        seconds: seconds.length,
      },
      stalls,
      maxWalMiB: wal.length > 0 ? Math.max(...wal) / 1024 ** 2 : undefined,
      serverCpuPct: serverS === undefined ? undefined : (serverS / wallS) * 100,
      postgresCpuPct: pgS === undefined ? undefined : (pgS / wallS) * 100,
      otherCpuPct: machineS === undefined || serverS === undefined ? undefined : Math.max(0, ((machineS - serverS - (pgS ?? 0) - selfS) / wallS) * 100),
    }
  } finally {
    await server.stop()
    await fresh?.drop()
    if (flags['loop-log'] && existsSync(loopFile)) writeFileSync(flags['loop-log'], readFileSync(loopFile))
    rmSync(dir, { recursive: true, force: true })
  }
}

function report(run: number, r: RunResult): void {
  const pct = (x: number | undefined) => (x === undefined ? '-' : `${Math.round(x)}%`)
  console.log(`  run ${run}: ${int(r.created)} rows in ${r.importSeconds.toFixed(1)} s = ${int(r.rowsPerSecond)} rows/s`)
  console.log(`    GET /v1/account (other account): n ${r.account.count}, p50 ${ms(r.account.p50)}, p99 ${ms(r.account.p99)}, max ${ms(r.account.max)}, failed ${r.account.failed}`)
  console.log(`    GET /healthz:                    n ${r.healthz.count}, p50 ${ms(r.healthz.p50)}, p99 ${ms(r.healthz.p99)}, max ${ms(r.healthz.max)}, failed ${r.healthz.failed}`)
  console.log(`    GET /v1/account before the import (${flags.idle} s, no import): p50 ${ms(r.idle.p50)}, p99 ${ms(r.idle.p99)}, max ${ms(r.idle.max)}`)
  console.log(`    server event loop: max delay ${ms(r.loop.max)}, worst 1-s p99 ${ms(r.loop.worstSecondP99)}, ${r.loop.secondsOver50} of ${r.loop.seconds} s with a delay over 50 ms`)
  if (r.stalls.length > 0) console.log(`    longest stalls: ${r.stalls.map((s) => `${s.ms} ms at ${s.atS} s (${int(s.processed)} rows done)`).join('; ')}`)
  console.log(`    CPU (% of one core): server ${pct(r.serverCpuPct)}${r.postgresCpuPct === undefined ? '' : `, PostgreSQL ${pct(r.postgresCpuPct)}`}, other ${pct(r.otherCpuPct)}${r.maxWalMiB === undefined ? '' : `; largest WAL ${r.maxWalMiB.toFixed(0)} MiB`}`)
}

async function main(): Promise<void> {
  const pgVersion = store === 'postgres' ? ` (PostgreSQL ${await serverVersion(ADMIN_URL)})` : ''
  console.log(`import latency benchmark: ${int(rows)} rows on ${store}${pgVersion}, Node ${process.version}, probes every ${intervalMs} ms`)
  const csv = await generateContactsCsv(resolve(PROJECT_DIR, '.bench', `contacts-${rows}.csv`), rows)
  const existingCsv = existing > 0 ? await generateContactsCsv(resolve(PROJECT_DIR, '.bench', `contacts-${existing}.csv`), existing) : undefined
  console.log(`CSV: ${csv} (${(statSync(csv).size / 1024 ** 2).toFixed(0)} MiB)${existingCsv ? `; ${int(existing)} contacts held by another account first` : ''}`)
  const entry = flags.entry ? resolve(flags.entry) : buildServer()

  const results: RunResult[] = []
  for (let run = 1; run <= runs; run++) {
    const quiet = await waitQuiet(flags['wait-quiet'], flags.noise)
    console.log(`  run ${run}: machine ${quiet.quiet ? 'quiet' : 'still busy'} (${Math.round(quiet.busyPct)}% of a core) after ${quiet.waitedS.toFixed(0)} s`)
    const result = await oneRun(run, entry, csv, existingCsv)
    report(run, result)
    results.push(result)
  }
  const p99 = median(results.map((r) => r.account.p99))
  console.log(`\nmedian of ${runs} run(s): GET /v1/account with no import p99 ${ms(median(results.map((r) => r.idle.p99)))}; import ${int(median(results.map((r) => r.rowsPerSecond)))} rows/s; GET /v1/account p50 ${ms(median(results.map((r) => r.account.p50)))}, p99 ${ms(p99)}, max ${ms(median(results.map((r) => r.account.max)))}; GET /healthz p99 ${ms(median(results.map((r) => r.healthz.p99)))}; event loop max ${ms(median(results.map((r) => r.loop.max)))}`)
  console.log(`p99 / target: ${ms(p99)} / ${targetMs} ms = ${(p99 / targetMs).toFixed(2)} (${p99 < targetMs ? 'PASS' : 'BELOW TARGET'})`)
  if (flags.json) writeFileSync(flags.json, JSON.stringify({ store, rows, existing, intervalMs, results }, null, 2))
  if (results.some((r) => r.account.failed > 0 || r.healthz.failed > 0)) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
