/**
 * bench:messaging — a broadcast to a million contacts, and single sends, on one server.
 *
 *   (a) POST /v1/broadcasts/{id}/send to a segment of --contacts contacts, until every
 *       recipient is queued (on this code inside the request), beside the floor: a bare
 *       INSERT … SELECT of the same rows on a copy of the same store, no server running;
 *   (b) recipients/s from that send until GET /v1/broadcasts/{id} says every recipient
 *       was handed to the simulator (sent = recipients), and until it says completed
 *       (every receipt recorded), SIMULATOR_DELIVERY_DELAY_MS = --delivery-delay;
 *   (c) p50/p99 of POST /v1/sms/send with one recipient at --rate requests/s for
 *       --duration s, once the broadcast has completed: with autocannon (overallRate),
 *       then evenly paced (one request every 1000/rate ms, open loop), since autocannon
 *       sends each connection's share of a second back to back at the start of it;
 *   (d) from just before (a) until (b) completes, GET /v1/account with ANOTHER account's
 *       key every --interval ms, open loop: p50/p99/max, as one event loop serves every tenant;
 *   (e) over the same span, POST /v1/sms/send by that other account, evenly paced at
 *       --rate requests/s, open loop: (c) while the broadcast runs (--no-during skips it).
 *
 * Targets (issue): (a) under 20 s on SQLite, (b) at least 5,000 recipients/s, (c) p99 under 20 ms;
 * during the broadcast, (d) p99 under 20 ms and max under 100 ms, (e) p99 under 20 ms.
 *
 *   npm run bench:messaging                                # SQLite
 *   npm run bench:messaging -- --store postgres            # PostgreSQL on 127.0.0.1:5432 (BENCH_DATABASE_URL)
 *   npm run bench:messaging -- --contacts 100000 --duration 10   # a quick try
 *
 * Flags: --contacts 1000000  --runs 1 (each on a fresh copy; medians printed)  --duration 30
 *        --rate 200  --connections 10 (autocannon)  --warmup 3  --interval 25  --idle 3
 *        --delivery-delay 100  --batch-size N (DISPATCH_BATCH_SIZE; the server's default when absent)
 *        --concurrency N (DISPATCH_CONCURRENCY; the server's default when absent)
 *        --max-wait 900 (seconds for (b); past it the rates so far are printed and (c) runs on a fresh copy)
 *        --commit REV (build src/ of that commit, read with git archive)  --entry FILE (a compiled main.js as it is)
 *        --wait-quiet 60 --noise 50 (before each run, wait up to 60 s for a second with the machine under 50% of a core busy)
 *        --no-paced (skip the evenly paced repeat of (c))  --no-during (skip (e))  --refresh (prepare the store again)
 *        --json FILE (every figure, and every probe of (d) with its time)
 *        --node-arg ARG (repeatable, for the server; e.g. --node-arg=--cpu-prof --node-arg=--cpu-prof-dir=DIR)
 *
 * The contacts are written once straight into the store (not through the import, which
 * bench:audience measures) and kept: a SQLite file in .bench/messaging/stores, or a
 * template database on the PostgreSQL server; each run works on its own copy. The
 * server is compiled to .bench/messaging (apart from the other benchmarks' .bench/dist)
 * and runs as a child process.
 */
import { writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { fetch as undiciFetch } from 'undici'
import { waitQuiet } from './lib/load.js'
import { serverVersion } from './lib/postgres.js'
import { machineCpuSeconds, processCpuSeconds, startServer, type RunningServer } from './lib/server.js'
import { buildCommit, buildWorkingTree, schemaFingerprint, type Build } from './messaging/build.js'
import { benchPhoneNumber, SEGMENT } from './messaging/contacts.js'
import { floorPostgres, floorSqlite, type FloorResult } from './messaging/floor.js'
import { patientAgent, Probe, type ProbeStats } from './messaging/probe.js'
import { JWT_SECRET, preparePostgres, prepareSqlite, type PreparedStore, type StoreCopy } from './messaging/store.js'

const { values: flags } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    contacts: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '1' },
    duration: { type: 'string', default: '30' },
    rate: { type: 'string', default: '200' },
    connections: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    interval: { type: 'string', default: '25' },
    idle: { type: 'string', default: '3' },
    'delivery-delay': { type: 'string', default: '100' },
    'batch-size': { type: 'string' },
    concurrency: { type: 'string' },
    'max-wait': { type: 'string', default: '900' },
    commit: { type: 'string' },
    entry: { type: 'string' },
    refresh: { type: 'boolean', default: false },
    json: { type: 'string' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    paced: { type: 'boolean', default: true },
    'wait-quiet': { type: 'string', default: '60' },
    noise: { type: 'string', default: '50' },
    'no-paced': { type: 'boolean', default: false },
    'no-during': { type: 'boolean', default: false },
  },
  strict: true,
})

function positive(name: string, raw: string | undefined): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} must be a positive integer, got "${raw}"`)
    process.exit(2)
  }
  return value
}
const store = flags.store
if (store !== 'sqlite' && store !== 'postgres') {
  console.error(`--store must be sqlite or postgres, got "${store}"`)
  process.exit(2)
}
const contacts = positive('contacts', flags.contacts)
const runs = positive('runs', flags.runs)
const durationS = positive('duration', flags.duration)
const rate = positive('rate', flags.rate)
const connections = positive('connections', flags.connections)
const warmupS = Number(flags.warmup) || 0
const intervalMs = positive('interval', flags.interval)
const idleMs = (Number(flags.idle) || 0) * 1000
const deliveryDelayMs = Number(flags['delivery-delay'])
const maxWaitMs = positive('max-wait', flags['max-wait']) * 1000
const during = !flags['no-during']
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ADMIN_TOKEN = 'bench-admin-token-0123456789'
const TARGET = { queueSeconds: 20, recipientsPerSecond: 5000, p99Ms: 20, bystanderMaxMs: 100 }

const log = (message: string) => process.stderr.write(`${message}\n`)
const sortedMedian = (xs: number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
const int = (x: number) => (Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en'))
const ms = (x: number) => (Number.isNaN(x) ? '-' : x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x).toLocaleString('en')} ms`)
const sec = (x: number) => (Number.isNaN(x) ? '-' : `${x.toFixed(2)} s`)
const pct = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${Math.round(x)}%`)
const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec))

// ------------------------------------------------------------------ CPU accounting
interface CpuMark {
  at: number
  server: number | undefined
  postgres: number | undefined
  machine: { busy: number; total: number } | undefined
  self: NodeJS.CpuUsage
}
/**
 * CPU seconds used by the PostgreSQL backends connected to one database (the server's
 * pool), from /proc: the backends are listed every 500 ms, so one that the pool closes
 * meanwhile is counted up to its last sample, and one it opens from its start.
 */
class BackendsCpu {
  private readonly baseline = new Map<number, number>()
  private readonly latest = new Map<number, number>()
  private timer: NodeJS.Timeout | undefined
  private client: import('pg').Client | undefined

  constructor(private readonly database: string) {}

  async start(): Promise<void> {
    const { default: pg } = await import('pg')
    this.client = new pg.Client({ connectionString: ADMIN_URL })
    await this.client.connect()
    await this.sample(true)
    this.timer = setInterval(() => void this.sample(false).catch(() => undefined), 500)
  }

  /** Seconds used so far. */
  async seconds(): Promise<number> {
    await this.sample(false)
    let total = 0
    for (const [pid, cpu] of this.latest) total += cpu - (this.baseline.get(pid) ?? 0)
    return total
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.client?.end()
  }

  private async sample(first: boolean): Promise<void> {
    const { rows } = await this.client!.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [this.database])
    for (const { pid } of rows) {
      const cpu = processCpuSeconds(pid)
      if (cpu === undefined) continue
      if (first) this.baseline.set(pid, cpu)
      this.latest.set(pid, cpu)
    }
  }
}
let backends: BackendsCpu | undefined
async function cpuMark(server: RunningServer, copy: StoreCopy): Promise<CpuMark> {
  if (copy.name && !backends) {
    backends = new BackendsCpu(copy.name)
    await backends.start()
  }
  const postgres = backends ? await backends.seconds() : undefined
  return { at: performance.now(), server: processCpuSeconds(server.pid), postgres, machine: machineCpuSeconds(), self: process.cpuUsage() }
}
async function stopCpuMarks(): Promise<void> {
  await backends?.stop()
  backends = undefined
}
/** Percent of one core between two marks: the server, every PostgreSQL process, and everything else but this process. */
function cpuBetween(a: CpuMark, b: CpuMark): { server: number | undefined; postgres: number | undefined; other: number | undefined; serverSeconds: number | undefined; postgresSeconds: number | undefined } {
  const wall = (b.at - a.at) / 1000
  const server = a.server !== undefined && b.server !== undefined ? b.server - a.server : undefined
  const postgres = a.postgres !== undefined && b.postgres !== undefined ? b.postgres - a.postgres : undefined
  const self = (b.self.user - a.self.user + b.self.system - a.self.system) / 1e6
  const machine = a.machine && b.machine ? b.machine.busy - a.machine.busy : undefined
  return {
    serverSeconds: server,
    postgresSeconds: postgres,
    server: server === undefined ? undefined : (server / wall) * 100,
    postgres: postgres === undefined ? undefined : (postgres / wall) * 100,
    other: machine === undefined || server === undefined ? undefined : Math.max(0, ((machine - server - (postgres ?? 0) - self) / wall) * 100),
  }
}

/** Waits (at most maxMs) until the server uses under 10% of a core over half a second: the work after a start or a broadcast has settled. */
async function waitServerIdle(server: RunningServer, maxMs: number): Promise<number> {
  const started = performance.now()
  for (;;) {
    const before = processCpuSeconds(server.pid)
    await sleep(500)
    const after = processCpuSeconds(server.pid)
    if (before === undefined || after === undefined || (after - before) / 0.5 < 0.1) return performance.now() - started
    if (performance.now() - started > maxMs) return performance.now() - started
  }
}

// ------------------------------------------------------------------ HTTP
async function api(server: RunningServer, token: string, method: string, path: string, body?: unknown, expected?: number): Promise<any> {
  const response = await undiciFetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher: patientAgent,
  })
  const text = await response.text()
  if (response.status >= 300 || (expected !== undefined && response.status !== expected)) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

/** The segment's cached count has been refreshed (the background refresher has been by), read from the store. */
async function segmentsCounted(copy: StoreCopy): Promise<boolean> {
  const text = 'select count(*) n from segments where count_version <> counted_version'
  if (copy.path) {
    const { default: SQLite } = await import('../src/platform/db/sqlite-binding.js')
    const db = new SQLite(copy.path, { readonly: true })
    try {
      return Number((db.prepare(text).get() as { n: number }).n) === 0
    } finally {
      db.close()
    }
  }
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: copy.databaseUrl })
  await client.connect()
  try {
    return Number((await client.query(text)).rows[0].n) === 0
  } finally {
    await client.end()
  }
}

// ------------------------------------------------------------------ one run
interface RunResult {
  floor: FloorResult
  queue: { seconds: number; answerSeconds: number; recipients: number; creditsUsed: number }
  handoff: { seconds: number; afterQueuedSeconds: number; recipientsPerSecond: number; afterQueuedRecipientsPerSecond: number }
  completion: { seconds: number; recipientsPerSecond: number; completed: boolean; delivered: number; failed: number; sent: number }
  probe: { idle: ProbeStats; queue: ProbeStats; dispatch: ProbeStats; all: ProbeStats }
  /** (e) the other account's paced sends during (a) and (b). */
  during?: { idle: ProbeStats; queue: ProbeStats; dispatch: ProbeStats; all: ProbeStats }
  timeline: { queuedS: number; handoffS: number; completionS: number; probes: [number, number, number][] }
  cpu: { queue: ReturnType<typeof cpuBetween>; dispatch: ReturnType<typeof cpuBetween>; send: ReturnType<typeof cpuBetween>; paced?: ReturnType<typeof cpuBetween> }
  /** (c) evenly paced, open loop (--paced). */
  paced?: ProbeStats
  send: { requests: number; rps: number; p50: number; p90: number; p99: number; max: number; mean: number; non2xx: number; errors: number; timeouts: number }
}

async function oneRun(run: number, build: Build, prepared: PreparedStore): Promise<RunResult> {
  const { accounts } = prepared
  const quiet = await waitQuiet(Number(flags['wait-quiet']) || 0, Number(flags.noise) || 50)
  log(`  run ${run}: machine ${quiet.quiet ? 'quiet' : 'NOT quiet'} (${Math.round(quiet.busyPct)}% of a core busy) after waiting ${quiet.waitedS.toFixed(0)} s`)

  // The floor, on its own copy of the prepared store, with no server running.
  const floorCopy = await prepared.copy('floor')
  let floor: FloorResult
  try {
    floor = floorCopy.path ? floorSqlite(floorCopy.path, accounts.senderAccountId) : await floorPostgres(floorCopy.databaseUrl, accounts.senderAccountId)
  } finally {
    await floorCopy.drop()
  }
  log(`  run ${run}: floor INSERT … SELECT ${int(floor.rows)} rows in ${sec(floor.seconds)}`)

  const start = (copy: StoreCopy) =>
    startServer({
      mode: 'dist',
      entry: build.entry,
      nodeArgs: flags['node-arg'] ?? [],
      env: {
        DATABASE_URL: copy.databaseUrl,
        JWT_SECRET,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: '1000000',
        ADMIN_TOKEN,
        CARRIER: 'simulator',
        SIMULATOR_DELIVERY_DELAY_MS: String(deliveryDelayMs),
        ...(flags['batch-size'] ? { DISPATCH_BATCH_SIZE: flags['batch-size'] } : {}),
        ...(flags.concurrency ? { DISPATCH_CONCURRENCY: flags.concurrency } : {}),
      },
    })
  let copy = await prepared.copy('run')
  let server = await start(copy)
  try {
    const { senderKey, senderAccountId, bystanderKey, bystanderAccountId } = accounts
    // The broadcast, then (c) twice (autocannon and paced), each with its warm-up.
    const sendRequests = 2 * (warmupS + durationS) * rate + 2000
    await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${senderAccountId}/credits`, { amount: contacts + sendRequests }, 200)
    // (e): enough for --max-wait at --rate.
    if (during) await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${bystanderAccountId}/credits`, { amount: Math.ceil((maxWaitMs / 1000 + idleMs / 1000 + 60) * rate) }, 200)
    const segmentId = (await api(server, senderKey, 'POST', '/v1/audience/segments', { ...SEGMENT, rules: JSON.stringify(SEGMENT.rules) }, 201)) as string
    const broadcastId = (await api(server, senderKey, 'POST', '/v1/broadcasts', { name: 'Bench broadcast', message: 'Flash sale today only: 30% off everything. Reply STOP to opt out', senderId: 'Bench', segmentId }, 201)) as string
    // Let the segment's background count and the server's other work finish first.
    for (const deadline = performance.now() + 60_000; !(await segmentsCounted(copy)) && performance.now() < deadline; ) await sleep(250)
    await waitServerIdle(server, 30_000)

    const probe = new Probe(`${server.url}/v1/account`, () => ({ headers: { authorization: `Bearer ${bystanderKey}` } }), intervalMs)
    probe.start()
    let bystanderSends = 0
    const bystanderBody = () => JSON.stringify({ recipients: [benchPhoneNumber(60_000_000 + bystanderSends++)], content: 'Your code is 654321', senderId: 'Other' })
    const duringSender = during ? new Probe(`${server.url}/v1/sms/send`, () => ({ method: 'POST', headers: { authorization: `Bearer ${bystanderKey}`, 'content-type': 'application/json' }, body: bystanderBody() }), 1000 / rate, 201) : undefined
    duringSender?.start()
    await sleep(idleMs)

    // (a) the send, until every recipient is queued: when the request queues them itself,
    // the first look after its answer finds them all; when they are queued after the
    // answer, until the broadcast's message (GET /v1/sms) counts as many as the answer.
    const cpu0 = await cpuMark(server, copy)
    const sendStart = performance.now()
    const started = (await api(server, senderKey, 'POST', `/v1/broadcasts/${broadcastId}/send`, {}, 202)) as { status: string; recipients: number; creditsUsed: number }
    const sendEnd = performance.now()
    const cpu1 = await cpuMark(server, copy)
    const recipients = started.recipients
    log(`  run ${run}: (a) POST send answered in ${sec((sendEnd - sendStart) / 1000)}: ${started.status}, ${int(recipients)} recipients`)

    // (b) until every recipient is handed over, then until completed.
    let queuedAt = Number.NaN
    let cpuQueued = cpu1
    let handoffAt = Number.NaN
    let completedAt = Number.NaN
    let last: any
    let lastLog = performance.now()
    for (let poll = 0; performance.now() - sendStart < maxWaitMs; poll++) {
      last = await api(server, senderKey, 'GET', `/v1/broadcasts/${broadcastId}`)
      const now = performance.now()
      if (Number.isNaN(queuedAt)) {
        // The broadcast's message counts the recipient rows written so far; nothing else
        // is sent from this account meanwhile, so it is the newest message.
        const newest = (await api(server, senderKey, 'GET', '/v1/sms?pageSize=1')).items[0]
        if (last.status === 'completed' || (newest?.broadcastId === broadcastId && newest.recipientCount >= recipients)) {
          queuedAt = poll === 0 ? sendEnd : performance.now()
          if (poll > 0) cpuQueued = await cpuMark(server, copy)
        }
      }
      if (Number.isNaN(handoffAt) && (last.sent >= recipients || last.status === 'completed')) handoffAt = now
      if (last.status === 'completed') {
        completedAt = now
        break
      }
      if (now - lastLog > 10_000) {
        lastLog = now
        log(`    ${((now - sendStart) / 1000).toFixed(0)} s: sent ${int(last.sent)}, delivered ${int(last.delivered)}, failed ${int(last.failed)} of ${int(recipients)}`)
      }
      await sleep(100)
    }
    const cpu2 = await cpuMark(server, copy)
    const dispatchEnd = Number.isNaN(completedAt) ? performance.now() : completedAt
    await probe.stop()
    await duringSender?.stop()
    const queueS = (queuedAt - sendStart) / 1000
    const handoffS = (handoffAt - sendStart) / 1000
    const completionS = (dispatchEnd - sendStart) / 1000
    log(`  run ${run}: (a) all queued after ${sec(queueS)}; (b) every recipient handed over after ${sec(handoffS)}, ${Number.isNaN(completedAt) ? `NOT completed after ${sec(completionS)}` : `completed after ${sec(completionS)}`} (from the send)`)

    // (c) single sends at a fixed rate, once the broadcast's work has settled; if it did
    // not complete within --max-wait, on a fresh copy, so that it does not run beside (c).
    if (Number.isNaN(completedAt)) {
      log(`  run ${run}: the broadcast did not complete within --max-wait; (c) runs on a fresh copy`)
      await stopCpuMarks()
      await server.stop()
      await copy.drop()
      copy = await prepared.copy('run')
      server = await start(copy)
      await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${senderAccountId}/credits`, { amount: sendRequests }, 200)
    }
    await waitServerIdle(server, 60_000)
    let n = 0
    const body = () => JSON.stringify({ recipients: [benchPhoneNumber(50_000_000 + n++)], content: 'Your code is 123456', senderId: 'Bench' })
    const sendOptions = (seconds: number): autocannon.Options => ({
      url: server.url,
      connections,
      overallRate: rate,
      ignoreCoordinatedOmission: true,
      duration: seconds,
      timeout: 10,
      requests: [
        {
          method: 'POST',
          path: '/v1/sms/send',
          headers: { authorization: `Bearer ${senderKey}`, 'content-type': 'application/json' },
          setupRequest: (request) => ({ ...request, body: body() }),
        },
      ],
    })
    if (warmupS > 0) await autocannon(sendOptions(warmupS))
    const cpu3 = await cpuMark(server, copy)
    const result = await autocannon(sendOptions(durationS))
    const cpu4 = await cpuMark(server, copy)
    log(`  run ${run}: (c) autocannon: ${int(result.requests.total)} sends in ${result.duration} s: p50 ${ms(result.latency.p50)}, p99 ${ms(result.latency.p99)}, max ${ms(result.latency.max)}`)

    // (c) again, evenly paced: autocannon's rate lets each connection send its share of a
    // second back to back at the start of the second, so 10 connections arrive as bursts
    // of 10 at a time; here one request leaves every 1000/rate ms, open loop.
    let paced: ProbeStats | undefined
    let cpuPaced: ReturnType<typeof cpuBetween> | undefined
    if (flags.paced && !flags['no-paced']) {
      await waitServerIdle(server, 30_000)
      const sender = new Probe(`${server.url}/v1/sms/send`, () => ({ method: 'POST', headers: { authorization: `Bearer ${senderKey}`, 'content-type': 'application/json' }, body: body() }), 1000 / rate, 201)
      sender.start()
      await sleep(warmupS * 1000)
      const from = performance.now()
      const cpu5 = await cpuMark(server, copy)
      await sleep(durationS * 1000)
      const to = performance.now()
      const cpu6 = await cpuMark(server, copy)
      await sender.stop()
      paced = sender.stats(from, to)
      cpuPaced = cpuBetween(cpu5, cpu6)
      log(`  run ${run}: (c) paced: ${int(paced.count)} sends: p50 ${ms(paced.p50)}, p99 ${ms(paced.p99)}, max ${ms(paced.max)}${paced.failed ? `, FAILED ${paced.failed}` : ''}`)
    }

    return {
      floor,
      queue: { seconds: queueS, answerSeconds: (sendEnd - sendStart) / 1000, recipients, creditsUsed: started.creditsUsed },
      handoff: {
        seconds: handoffS,
        afterQueuedSeconds: (handoffAt - queuedAt) / 1000,
        recipientsPerSecond: Number.isNaN(handoffS) ? last.sent / completionS : recipients / handoffS,
        afterQueuedRecipientsPerSecond: recipients / ((handoffAt - queuedAt) / 1000),
      },
      completion: {
        seconds: completionS,
        recipientsPerSecond: Number.isNaN(completedAt) ? (last.delivered + last.failed) / completionS : recipients / completionS,
        completed: !Number.isNaN(completedAt),
        delivered: last.delivered,
        failed: last.failed,
        sent: last.sent,
      },
      timeline: {
        queuedS: queueS,
        handoffS,
        completionS,
        // Every probe: when it was sent (s from the send) and how long it took (ms).
        probes: probe.samples.map((p) => [Number(((p.sentAt - sendStart) / 1000).toFixed(3)), Number(p.ms.toFixed(1)), p.status]),
      },
      probe: {
        idle: probe.stats(0, sendStart),
        queue: probe.stats(sendStart, queuedAt),
        dispatch: probe.stats(queuedAt, dispatchEnd),
        all: probe.stats(sendStart, dispatchEnd),
      },
      ...(duringSender
        ? {
            during: {
              idle: duringSender.stats(0, sendStart),
              queue: duringSender.stats(sendStart, queuedAt),
              dispatch: duringSender.stats(queuedAt, dispatchEnd),
              all: duringSender.stats(sendStart, dispatchEnd),
            },
          }
        : {}),
      cpu: { queue: cpuBetween(cpu0, cpuQueued), dispatch: cpuBetween(cpuQueued, cpu2), send: cpuBetween(cpu3, cpu4), ...(cpuPaced ? { paced: cpuPaced } : {}) },
      ...(paced ? { paced } : {}),
      send: {
        requests: result.requests.total,
        rps: result.requests.total / result.duration,
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
        mean: result.latency.mean,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
      },
    }
  } finally {
    await stopCpuMarks()
    await server.stop()
    await copy.drop()
  }
}

function report(label: string, r: RunResult): void {
  const probeLine = (name: string, s: ProbeStats) => `    ${name.padEnd(34)} n ${String(s.count).padStart(5)}  p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}  max ${ms(s.max).padStart(9)}${s.failed ? `  FAILED ${s.failed}` : ''}`
  const perItem = (seconds: number | undefined, n: number) => (seconds === undefined || n === 0 ? '-' : `${((seconds * 1e6) / n).toFixed(1)} µs`)
  const cpuLine = (c: ReturnType<typeof cpuBetween>, n: number, what: string) =>
    `server ${pct(c.server)}${store === 'postgres' ? `, PostgreSQL ${pct(c.postgres)}` : ''}, other ${pct(c.other)} of a core; server ${perItem(c.serverSeconds, n)}${store === 'postgres' ? ` + PostgreSQL ${perItem(c.postgresSeconds, n)}` : ''} per ${what}`
  console.log(`\n${label}`)
  console.log(`  (a) POST /v1/broadcasts/{id}/send to all recipients queued: ${sec(r.queue.seconds)} for ${int(r.queue.recipients)} recipients (${int(r.queue.recipients / r.queue.seconds)}/s; the request answered after ${sec(r.queue.answerSeconds)}); CPU ${cpuLine(r.cpu.queue, r.queue.recipients, 'recipient')}`)
  console.log(`      floor, bare INSERT … SELECT of ${int(r.floor.rows)} rows: ${sec(r.floor.seconds)}; send / floor ${(r.queue.seconds / r.floor.seconds).toFixed(2)}; send / target ${TARGET.queueSeconds} s ${(r.queue.seconds / TARGET.queueSeconds).toFixed(2)}`)
  if (Number.isNaN(r.handoff.seconds)) console.log(`  (b) NOT all handed over within --max-wait: ${int(r.completion.sent)} sent in ${sec(r.completion.seconds)} = ${int(r.handoff.recipientsPerSecond)} recipients/s`)
  else console.log(`  (b) handed over: ${sec(r.handoff.seconds)} from the send = ${int(r.handoff.recipientsPerSecond)} recipients/s (${int(r.handoff.afterQueuedRecipientsPerSecond)}/s from all queued)`)
  console.log(`      ${r.completion.completed ? 'completed' : 'NOT COMPLETED within --max-wait (rate of those final so far)'}: ${sec(r.completion.seconds)} from the send = ${int(r.completion.recipientsPerSecond)} recipients/s (delivered ${int(r.completion.delivered)}, failed ${int(r.completion.failed)})\n      CPU from all queued to completion: ${cpuLine(r.cpu.dispatch, r.completion.sent, 'recipient handed over')}`)
  console.log(`  (c) POST /v1/sms/send, one recipient, ${rate}/s for ${durationS} s: ${int(r.send.requests)} requests (${int(r.send.rps)}/s), p50 ${ms(r.send.p50)}, p90 ${ms(r.send.p90)}, p99 ${ms(r.send.p99)}, max ${ms(r.send.max)}; p99 / target ${(r.send.p99 / TARGET.p99Ms).toFixed(2)}; CPU ${cpuLine(r.cpu.send, r.send.requests, 'send')}${r.send.non2xx + r.send.errors + r.send.timeouts > 0 ? `; NON-2XX ${r.send.non2xx}, errors ${r.send.errors}, timeouts ${r.send.timeouts}` : ''}`)
  if (r.paced) console.log(`      the same evenly paced (one request every ${(1000 / rate).toFixed(1)} ms, open loop): ${int(r.paced.count)} requests, p50 ${ms(r.paced.p50)}, p99 ${ms(r.paced.p99)}, max ${ms(r.paced.max)}; p99 / target ${(r.paced.p99 / TARGET.p99Ms).toFixed(2)}; CPU ${cpuLine(r.cpu.paced!, r.paced.count, 'send')}${r.paced.failed ? `; FAILED ${r.paced.failed}` : ''}`)
  console.log(`  (d) GET /v1/account, another account's key, every ${intervalMs} ms (open loop):`)
  console.log(probeLine(`before the send (${idleMs / 1000} s, idle)`, r.probe.idle))
  console.log(probeLine('during (a), send to all queued', r.probe.queue))
  console.log(probeLine('during (b), until completed', r.probe.dispatch))
  console.log(probeLine('during (a) and (b)', r.probe.all))
  if (r.during) {
    console.log(`  (e) POST /v1/sms/send, another account, evenly paced at ${rate}/s (open loop):`)
    console.log(probeLine(`before the send (${idleMs / 1000} s, idle)`, r.during.idle))
    console.log(probeLine('during (a), send to all queued', r.during.queue))
    console.log(probeLine('during (b), until completed', r.during.dispatch))
    console.log(probeLine('during (a) and (b)', r.during.all))
  }
}

async function main(): Promise<void> {
  const pgVersion = store === 'postgres' ? `PostgreSQL ${await serverVersion(ADMIN_URL)} on ${new URL(ADMIN_URL).host}` : 'SQLite (better-sqlite3)'
  console.log(`messaging benchmark: ${int(contacts)} contacts on ${pgVersion}; Node ${process.version}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 1024 ** 3)} GiB`)
  const build = flags.entry ? { entry: flags.entry, code: `${flags.entry} as given` } : flags.commit ? buildCommit(flags.commit) : buildWorkingTree()
  console.log(`code: ${build.code}`)
  const fingerprint = schemaFingerprint(build.entry)
  const prepared = store === 'postgres' ? await preparePostgres(build.entry, ADMIN_URL, contacts, fingerprint, flags.refresh) : await prepareSqlite(build.entry, contacts, fingerprint, flags.refresh)
  console.log(`store: ${prepared.describe} (a copy per run); segment ${JSON.stringify(SEGMENT.rules)}; SIMULATOR_DELIVERY_DELAY_MS=${deliveryDelayMs}${flags['batch-size'] ? `, DISPATCH_BATCH_SIZE=${flags['batch-size']}` : ''}`)

  const results: RunResult[] = []
  for (let run = 1; run <= runs; run++) {
    const result = await oneRun(run, build, prepared)
    report(`run ${run} of ${runs}`, result)
    results.push(result)
  }

  const m = (pick: (r: RunResult) => number) => sortedMedian(results.map(pick))
  const queueS = m((r) => r.queue.seconds)
  const floorS = m((r) => r.floor.seconds)
  const handoffRate = m((r) => r.handoff.recipientsPerSecond)
  const completionRate = m((r) => r.completion.recipientsPerSecond)
  const p99 = m((r) => r.send.p99)
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'BELOW TARGET')
  console.log(`\nsummary, ${store}, ${int(contacts)} contacts, median of ${runs} run(s):`)
  console.log(`  (a) queue ${int(m((r) => r.queue.recipients))} recipients: ${sec(queueS)}; floor ${sec(floorS)} (send / floor ${(queueS / floorS).toFixed(2)}); target < ${TARGET.queueSeconds} s on SQLite${store === 'sqlite' ? `: ${(queueS / TARGET.queueSeconds).toFixed(2)} of it, ${verdict(queueS < TARGET.queueSeconds)}` : ` (none set for PostgreSQL): ${(queueS / TARGET.queueSeconds).toFixed(2)} of it`}`)
  console.log(`  (b) hand-off ${int(handoffRate)} recipients/s, completion ${int(completionRate)} recipients/s (from the send); target >= ${int(TARGET.recipientsPerSecond)}/s: hand-off ${(handoffRate / TARGET.recipientsPerSecond).toFixed(2)}x ${verdict(handoffRate >= TARGET.recipientsPerSecond)}, completion ${(completionRate / TARGET.recipientsPerSecond).toFixed(2)}x ${verdict(completionRate >= TARGET.recipientsPerSecond)}`)
  console.log(`  (c) POST /v1/sms/send at ${rate}/s: p50 ${ms(m((r) => r.send.p50))}, p99 ${ms(p99)}; target p99 < ${TARGET.p99Ms} ms: ${(p99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(p99 < TARGET.p99Ms)}`)
  if (results.every((r) => r.paced)) {
    const pacedP99 = m((r) => r.paced!.p99)
    console.log(`      evenly paced: p50 ${ms(m((r) => r.paced!.p50))}, p99 ${ms(pacedP99)}: ${(pacedP99 / TARGET.p99Ms).toFixed(2)} of the target, ${verdict(pacedP99 < TARGET.p99Ms)}`)
  }
  const probeP99 = m((r) => r.probe.all.p99)
  const probeMax = m((r) => r.probe.all.max)
  console.log(`  (d) GET /v1/account (other account) during (a)+(b): p50 ${ms(m((r) => r.probe.all.p50))}, p99 ${ms(probeP99)}, max ${ms(probeMax)}; during (a) alone max ${ms(m((r) => r.probe.queue.max))}; idle p99 ${ms(m((r) => r.probe.idle.p99))}; target p99 < ${TARGET.p99Ms} ms: ${(probeP99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(probeP99 < TARGET.p99Ms)}; max < ${TARGET.bystanderMaxMs} ms: ${(probeMax / TARGET.bystanderMaxMs).toFixed(2)} of it, ${verdict(probeMax < TARGET.bystanderMaxMs)}`)
  if (results.every((r) => r.during)) {
    const duringP99 = m((r) => r.during!.all.p99)
    console.log(`  (e) POST /v1/sms/send (other account) at ${rate}/s during (a)+(b): p50 ${ms(m((r) => r.during!.all.p50))}, p99 ${ms(duringP99)}, max ${ms(m((r) => r.during!.all.max))}; during (a) alone p99 ${ms(m((r) => r.during!.queue.p99))}; idle p99 ${ms(m((r) => r.during!.idle.p99))}; target p99 < ${TARGET.p99Ms} ms: ${(duringP99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(duringP99 < TARGET.p99Ms)}`)
  }
  if (flags.json) writeFileSync(flags.json, JSON.stringify({ store, contacts, code: build.code, deliveryDelayMs, rate, durationS, results }, null, 2))
  if (results.some((r) => r.send.non2xx + r.send.errors + r.send.timeouts > 0 || (r.paced?.failed ?? 0) > 0 || (r.during?.all.failed ?? 0) > 0 || !r.completion.completed)) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
