/**
 * bench:export — the CSV exports of a million rows, read through a socket, while another
 * account is served.
 *
 *   (a) GET /v1/sms/export of --recipients recipients of one account (bench/export/recipients.ts:
 *       one broadcast of 30% of them, broadcasts of 5,000, and single sends between them);
 *   (b) GET /v1/contacts/export of that account's --contacts contacts (three attributes each);
 *
 * each read to its end as fast as the client can, --runs times on the same server (the
 * first run also fills the store's caches: the SQLite reader thread's page cache grows to
 * 64 MiB). Meanwhile GET /v1/account with ANOTHER account's key every --interval ms, open
 * loop. Printed per export: rows (checked against what was written), seconds, the server's
 * memory (VmRSS before, its peak sampled every 10 ms during, and VmHWM before and after,
 * from /proc/<pid>/status) and the probe's p50/p99/max.
 *
 * Targets (issue 31): memory growth under 50 MB, the other account's p99 under 100 ms.
 *
 *   npm run bench:export                          # SQLite
 *   npm run bench:export -- --store postgres      # PostgreSQL on 127.0.0.1:5432 (BENCH_DATABASE_URL)
 *   npm run bench:export -- --recipients 100000 --contacts 100000   # a quick try
 *
 * Flags: --recipients 1000000  --contacts 1000000  --runs 2  --interval 25
 *        --wait-quiet 60 --noise 50 (before each export, wait up to 60 s for a second with the machine under 50% of a core busy)
 *        --entry FILE (a compiled main.js as it is)  --refresh (prepare the contacts' store again)
 *        --node-arg ARG (repeatable, for the server; e.g. --node-arg=--trace-gc)
 *
 * The contacts and both accounts come from bench:messaging's prepared store (kept in
 * .bench/messaging/stores, or as a template database); the message log is written into
 * each run's own copy of it, straight into the store with no server running. The server
 * is compiled to .bench/export/dist and runs as a child process.
 */
import { request } from 'node:http'
import { readFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { flag, parseFlags, positiveInteger } from '../lib/flags.js'
import { serverVersion } from '../lib/postgres.js'
import { waitQuiet } from '../lib/load.js'
import { buildServer, Cleanups, machineCpuSeconds, processCpuSeconds, startServer, type RunningServer } from '../lib/server.js'
import { schemaFingerprint } from '../messaging/build.js'
import { int, log, ms, sec, sleep } from '../messaging/format.js'
import { Probe, type ProbeStats } from '../messaging/probe.js'
import { JWT_SECRET, preparePostgres, prepareSqlite } from '../messaging/store.js'
import { writeMessageLogPostgres, writeMessageLogSqlite, type MessageLog } from './recipients.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  recipients: flag.string('1000000'),
  contacts: flag.string('1000000'),
  runs: flag.string('2'),
  interval: flag.string('25'),
  'wait-quiet': flag.number(60),
  noise: flag.number(50),
  entry: flag.string(),
  refresh: flag.boolean(),
  'node-arg': flag.list(),
})

const store = flags.store
if (store !== 'sqlite' && store !== 'postgres') {
  console.error(`--store must be sqlite or postgres, got "${store}"`)
  process.exit(2)
}
const recipients = positiveInteger('recipients', flags.recipients)
const contacts = positiveInteger('contacts', flags.contacts)
const runs = positiveInteger('runs', flags.runs)
const intervalMs = positiveInteger('interval', flags.interval)
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const TARGET = { growthMb: 50, p99Ms: 100 }
const IDLE_MS = 2000

interface Memory {
  rssMb: number
  hwmMb: number
}

/** VmRSS and VmHWM of a process, in MB (MiB), from /proc. */
function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 }
}

/** Reads a GET to its end through a socket of its own, counting lines and bytes, holding nothing. */
function download(url: string, token: string): Promise<{ lines: number; bytes: number; firstByteSeconds: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        let body = ''
        res.setEncoding('utf8').on('data', (text: string) => (body += text))
        res.on('end', () => reject(new Error(`GET ${url}: ${res.statusCode} ${body.slice(0, 500)}`)))
        return
      }
      let lines = 0
      let bytes = 0
      let firstByteAt: number | undefined
      res.on('data', (chunk: Buffer) => {
        firstByteAt ??= performance.now()
        bytes += chunk.length
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
      })
      res.on('end', () => resolve({ lines, bytes, firstByteSeconds: ((firstByteAt ?? performance.now()) - started) / 1000 }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

interface ExportResult {
  /** How busy the machine was just before (the quietest second waited for) and during, in % of one core. */
  busyBeforePct: number
  busyDuringPct: number
  rows: number
  expected: number
  megabytes: number
  seconds: number
  firstByteSeconds: number
  before: Memory
  peakRssMb: number
  after: Memory
  cpuSeconds: number | undefined
  probe: ProbeStats
}

async function measure(server: RunningServer, path: string, token: string, bystanderKey: string, expected: number): Promise<ExportResult> {
  const quiet = await waitQuiet(flags['wait-quiet'], flags.noise)
  const machineBefore = machineCpuSeconds()
  const before = memoryOf(server.pid)
  let peakRssMb = before.rssMb
  const sampler = setInterval(() => {
    peakRssMb = Math.max(peakRssMb, memoryOf(server.pid).rssMb)
  }, 10)
  const probe = new Probe(`${server.url}/v1/account`, () => ({ headers: { authorization: `Bearer ${bystanderKey}` } }), intervalMs)
  const cpuBefore = processCpuSeconds(server.pid)
  probe.start()
  const started = performance.now()
  try {
    const { lines, bytes, firstByteSeconds } = await download(`${server.url}${path}`, token)
    const ended = performance.now()
    const cpuAfter = processCpuSeconds(server.pid)
    const machineAfter = machineCpuSeconds()
    await probe.stop()
    return {
      busyBeforePct: quiet.busyPct,
      busyDuringPct: machineBefore && machineAfter ? ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total || 1)) * cpus().length * 100 : Number.NaN,
      rows: lines - 1,
      expected,
      megabytes: bytes / 1024 ** 2,
      seconds: (ended - started) / 1000,
      firstByteSeconds,
      before,
      peakRssMb: Math.max(peakRssMb, memoryOf(server.pid).rssMb),
      after: memoryOf(server.pid),
      cpuSeconds: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
      probe: probe.stats(started, ended),
    }
  } finally {
    clearInterval(sampler)
    await probe.stop()
  }
}

const mb = (x: number) => `${x.toFixed(1)} MB`

function report(label: string, r: ExportResult): boolean {
  const growth = r.peakRssMb - r.before.rssMb
  const rowsOk = r.rows === r.expected
  const memoryOk = growth < TARGET.growthMb
  const probeOk = r.probe.p99 < TARGET.p99Ms && r.probe.failed === 0
  console.log(`\n${label} (machine ${Math.round(r.busyBeforePct)}% of a core busy before, ${Math.round(r.busyDuringPct)}% during, of ${cpus().length * 100}%)`)
  console.log(`  ${int(r.rows)} rows${rowsOk ? '' : ` BUT ${int(r.expected)} WERE WRITTEN`}, ${mb(r.megabytes)} in ${sec(r.seconds)} (${int(r.rows / r.seconds)} rows/s; first byte after ${sec(r.firstByteSeconds)}); server CPU ${r.cpuSeconds === undefined ? '-' : sec(r.cpuSeconds)}`)
  console.log(`  server memory: VmRSS ${mb(r.before.rssMb)} before, peak ${mb(r.peakRssMb)} during: growth ${mb(growth)} (target < ${TARGET.growthMb} MB${memoryOk ? '' : ': MISSED'}); VmHWM ${mb(r.before.hwmMb)} -> ${mb(r.after.hwmMb)}; VmRSS after ${mb(r.after.rssMb)}`)
  console.log(`  GET /v1/account by another account every ${intervalMs} ms: n ${r.probe.count}, p50 ${ms(r.probe.p50)}, p99 ${ms(r.probe.p99)}, max ${ms(r.probe.max)} (target p99 < ${TARGET.p99Ms} ms${probeOk ? '' : ': MISSED'})${r.probe.failed ? `; FAILED ${r.probe.failed}` : ''}`)
  return rowsOk && memoryOk && probeOk
}

async function main(): Promise<void> {
  const cleanups = new Cleanups(log)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void cleanups.run().finally(() => process.exit(130)))
  }
  try {
    const where = store === 'postgres' ? `PostgreSQL ${await serverVersion(ADMIN_URL)} on ${new URL(ADMIN_URL).host}` : 'SQLite (better-sqlite3)'
    console.log(`export benchmark: ${int(recipients)} recipients and ${int(contacts)} contacts of one account, on ${where}; Node ${process.version}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 1024 ** 3)} GiB`)
    const entry = flags.entry ?? buildServer('export/dist')
    const prepared = store === 'postgres' ? await preparePostgres(entry, ADMIN_URL, contacts, 'single', schemaFingerprint(entry), flags.refresh) : await prepareSqlite(entry, contacts, 'single', schemaFingerprint(entry), flags.refresh)
    const { senderAccountId, senderKey, bystanderKey } = prepared.accounts
    const copy = await prepared.copy('export')
    cleanups.push(() => copy.drop())

    const writing = performance.now()
    const progress = (done: number) => log(`  ${int(done)} recipients`)
    log(`writing the message log: ${int(recipients)} recipients into ${copy.path ?? copy.name}`)
    const messageLog: MessageLog = copy.path ? writeMessageLogSqlite(copy.path, senderAccountId, recipients, progress) : await writeMessageLogPostgres(copy.databaseUrl, senderAccountId, recipients, progress)
    log(`written in ${sec((performance.now() - writing) / 1000)}: ${int(messageLog.messages)} messages`)
    console.log(`store: ${prepared.describe} (a copy), with ${int(messageLog.recipients)} recipients of ${int(messageLog.messages)} messages written into it`)

    const server = await startServer({ mode: 'dist', entry, nodeArgs: flags['node-arg'], env: { DATABASE_URL: copy.databaseUrl, JWT_SECRET, LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000' } })
    cleanups.push(() => server.stop())

    const idle = new Probe(`${server.url}/v1/account`, () => ({ headers: { authorization: `Bearer ${bystanderKey}` } }), intervalMs)
    const idleFrom = performance.now()
    idle.start()
    await sleep(IDLE_MS)
    await idle.stop()
    const quiet = idle.stats(idleFrom, performance.now())
    console.log(`idle, before any export: GET /v1/account every ${intervalMs} ms: n ${quiet.count}, p50 ${ms(quiet.p50)}, p99 ${ms(quiet.p99)}, max ${ms(quiet.max)}; server VmRSS ${mb(memoryOf(server.pid).rssMb)}`)

    const smsPath = `/v1/sms/export?from=${encodeURIComponent(messageLog.from)}&to=${encodeURIComponent(messageLog.to)}`
    let ok = true
    for (let run = 1; run <= runs; run++) ok = report(`(a) GET /v1/sms/export, run ${run} of ${runs}`, await measure(server, smsPath, senderKey, bystanderKey, messageLog.recipients)) && ok
    for (let run = 1; run <= runs; run++) ok = report(`(b) GET /v1/contacts/export, run ${run} of ${runs}`, await measure(server, '/v1/contacts/export', senderKey, bystanderKey, contacts)) && ok
    if (!ok) process.exitCode = 1
  } finally {
    await cleanups.run()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
