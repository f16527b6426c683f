/**
 * bench:webhooks — 1,000 webhooks on one event type, 100 events: 100,000 signed
 * deliveries to a local HTTPS receiver that answers 200 at once.
 *
 * Per run, on a fresh store: the compiled server as a child process
 * (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, the bench's throwaway CA trusted through
 * NODE_EXTRA_CA_CERTS), the receiver in a process of its own (bench/webhooks/receiver.ts),
 * one account, --webhooks webhooks on ContactCreated created through the API, each with
 * its own path on the receiver. Then, after a warm-up event (one delivery per webhook,
 * not counted) and a wait for a quiet machine:
 *   floor   a bare undici loop in this process POSTs --events × --webhooks signed bodies
 *           of the same size to the same receiver and paths, with as many requests in
 *           flight as the server's delivery worker allows (read from the compiled
 *           webhooks.js, WORKER.maxInFlight); deliveries/s from its start to the last arrival;
 *   burst   --events POST /v1/contacts/single back to back (each emits one ContactCreated):
 *           deliveries/s from the first request to the last arrival, and the ratio to the
 *           floor (target >= 0.5); event-to-delivery latency, from the answer of the request
 *           that caused the event to the arrival at the receiver;
 *   paced   --events more, one at a time: the next is triggered once every webhook has
 *           received the previous one, and --pause ms more. Event-to-delivery latency
 *           p50/p99 (target p99 < 250 ms) of an event that finds the worker idle: the path
 *           of an event (relay, fan-out, its 1,000 deliveries) rather than the queue a
 *           burst builds, and on a shared machine, not an open-loop rate it cannot keep.
 * Unrelated requests: a GET /v1/account every 20 ms, one after another, for 3 s on the idle
 * server before the burst and then for the whole burst: their latency p50/p99/max.
 * After the run the store is read: every delivery attempted once and logged once, and
 * the latency split into fan-out (answer -> delivery row written), queue (row -> attempt
 * started) and send (attempt started -> arrival).
 *
 *   npm run bench:webhooks                              # SQLite, a temporary file
 *   npm run bench:webhooks -- --store postgres          # a fresh database on 127.0.0.1:5432 (BENCH_DATABASE_URL), dropped after
 *   npm run bench:webhooks -- --runs 3
 *
 * Flags: --runs 1 (medians printed)  --webhooks 1000  --events 100  --pause 100
 *        --no-paced  --concurrency N (floor; default: the server's, read from the build)
 *        --commit REV (build src/ of that commit, read with git archive; by default the working tree's src/)
 *        --entry FILE (a compiled main.js)
 *        --wait-quiet 60 --noise 40  --max-wait 600 (seconds per phase)  --json FILE
 *        --outbox-poll-ms N (OUTBOX_POLL_MS for the server; its default, 200, when absent)
 *        --node-arg ARG (repeatable, for the server; e.g. --node-arg=--cpu-prof --node-arg=--cpu-prof-dir=DIR)
 * env:   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { createTestCa } from '../test/support/tls.js'
import { waitQuiet } from './lib/load.js'
import { createFreshDatabase, serverVersion, type FreshDatabase } from './lib/postgres.js'
import { buildServer, machineCpuSeconds, processCpuSeconds, processesCpuSeconds, startServer, type RunningServer } from './lib/server.js'
import { buildCommit } from './messaging/build.js'
import { benchPhoneNumber } from './messaging/contacts.js'
import { Floor } from './webhooks/floor.js'
import { Receiver, type ReceivedRecords } from './webhooks/receiver-client.js'
import { recordedDeliveries, type RecordedDelivery } from './webhooks/store.js'

const { values: flags } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    runs: { type: 'string', default: '1' },
    webhooks: { type: 'string', default: '1000' },
    events: { type: 'string', default: '100' },
    pause: { type: 'string', default: '100' },
    'no-paced': { type: 'boolean', default: false },
    concurrency: { type: 'string' },
    commit: { type: 'string' },
    entry: { type: 'string' },
    'wait-quiet': { type: 'string', default: '60' },
    noise: { type: 'string', default: '40' },
    'max-wait': { type: 'string', default: '600' },
    json: { type: 'string' },
    'outbox-poll-ms': { type: 'string' },
    'node-arg': { type: 'string', multiple: true, default: [] },
  },
  strict: true,
})
const store = flags.store === 'postgres' ? 'postgres' : 'sqlite'
const runs = Number(flags.runs)
const webhookCount = Number(flags.webhooks)
const eventCount = Number(flags.events)
const pauseMs = Number(flags.pause)
const maxWaitMs = Number(flags['max-wait']) * 1000
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const JWT_SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const TARGET_RATIO = 0.5
const TARGET_P99_MS = 250

const now = () => performance.timeOrigin + performance.now()
const sorted = (xs: number[]) => Float64Array.from(xs).sort()
/** Nearest-rank percentile. */
function percentile(xs: number[] | Float64Array, p: number): number {
  const s = xs instanceof Float64Array ? xs : sorted(xs)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}
const median = (xs: number[]) => percentile(xs, 50)
const int = (x: number) => (Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en'))
const ms = (x: number) => (Number.isNaN(x) ? '-' : `${x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en')} ms`)
const pct = (x: number | undefined) => (x === undefined ? '-' : `${Math.round(x)}%`)

interface Build {
  entry: string
  code: string
}

/** The delivery worker's overall bound on attempts in flight, as compiled (WORKER.maxInFlight in webhooks.ts). */
function serverConcurrency(entry: string): number {
  const source = readFileSync(join(resolve(entry, '..'), 'modules', 'webhooks', 'webhooks.js'), 'utf8')
  const match = /maxInFlight:\s*(\d+)/.exec(source)
  if (!match) throw new Error('could not read maxInFlight from the compiled webhooks.js; pass --concurrency')
  return Number(match[1])
}

interface CpuMark {
  server: number | undefined
  postgres: number | undefined
  receiver: number | undefined
  machine: { busy: number; total: number } | undefined
  self: NodeJS.CpuUsage
  at: number
}

interface Cpu {
  /** Percent of one core over the phase. */
  server: number | undefined
  postgres: number | undefined
  receiver: number | undefined
  bench: number
  other: number | undefined
  /** Server CPU time per delivery, µs. */
  serverMicrosPerDelivery: number | undefined
  postgresMicrosPerDelivery: number | undefined
}

function markCpu(server: RunningServer | undefined, receiver: Receiver): CpuMark {
  return {
    server: server ? processCpuSeconds(server.pid) : undefined,
    postgres: store === 'postgres' ? processesCpuSeconds('postgres') : undefined,
    receiver: processCpuSeconds(receiver.pid),
    machine: machineCpuSeconds(),
    self: process.cpuUsage(),
    at: now(),
  }
}

function cpuSince(before: CpuMark, after: CpuMark, deliveries: number): Cpu {
  const wallS = (after.at - before.at) / 1000
  const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a)
  const server = diff(before.server, after.server)
  const postgres = diff(before.postgres, after.postgres)
  const receiver = diff(before.receiver, after.receiver)
  const self = (after.self.user - before.self.user + after.self.system - before.self.system) / 1e6
  const machine = before.machine && after.machine ? after.machine.busy - before.machine.busy : undefined
  const perCore = (s: number | undefined) => (s === undefined ? undefined : (s / wallS) * 100)
  return {
    server: perCore(server),
    postgres: perCore(postgres),
    receiver: perCore(receiver),
    bench: perCore(self)!,
    other: machine === undefined ? undefined : Math.max(0, perCore(machine - (server ?? 0) - (postgres ?? 0) - (receiver ?? 0) - self)!),
    serverMicrosPerDelivery: server === undefined ? undefined : (server * 1e6) / deliveries,
    postgresMicrosPerDelivery: postgres === undefined ? undefined : (postgres * 1e6) / deliveries,
  }
}

async function call(url: string, method: string, body: unknown, token?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`)
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
}

async function newKey(server: RunningServer): Promise<string> {
  const email = `webhooks-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`
  const password = 'bench password 0123'
  await call(`${server.url}/v1/auth/signup`, 'POST', { email, password, accountName: 'Webhooks bench' })
  const { token } = (await call(`${server.url}/v1/auth/login`, 'POST', { email, password })).body
  return (await call(`${server.url}/v1/keys`, 'POST', { name: 'bench', permission: 'Full' }, token)).body as string
}

/** Creates the webhooks through the API, ten requests at a time; returns their ids by index. */
async function createWebhooks(server: RunningServer, key: string, receiver: Receiver): Promise<string[]> {
  const ids: string[] = new Array(webhookCount)
  let next = 0
  const loop = async () => {
    for (let i = next++; i < webhookCount; i = next++) {
      ids[i] = (await call(`${server.url}/v1/webhooks`, 'POST', { endpoint: receiver.url(`/w/${i}`), eventType: 'ContactCreated' }, key)).body as string
    }
  }
  await Promise.all(Array.from({ length: 10 }, loop))
  return ids
}

interface Trigger {
  contactId: string
  sentAt: number
  answeredAt: number
}

let phoneCounter = 0
async function trigger(server: RunningServer, key: string): Promise<Trigger> {
  const sentAt = now()
  const { status, body } = await call(`${server.url}/v1/contacts/single`, 'POST', { phoneNumber: benchPhoneNumber(phoneCounter++) }, key)
  if (status !== 201) throw new Error(`POST /v1/contacts/single answered ${status}: the number existed`)
  return { contactId: body.id as string, sentAt, answeredAt: now() }
}

interface Latency {
  p50: number
  p99: number
  max: number
}

interface PhaseResult {
  deliveries: number
  seconds: number
  deliveriesPerSecond: number
  latency: Latency
  /** Per delivery, from the store: answer -> row written, row -> first attempt, attempt -> arrival. */
  split?: { fanOut: Latency; queue: Latency; send: Latency }
  cpu: Cpu
  /** Arrivals that repeat a (webhook, event) pair already received. */
  duplicates: number
  /** Arrivals of events of an earlier phase (an attempt repeated after its claim ran out). */
  strays: number
  newConnections: number
  triggers?: Trigger[]
  records?: ReceivedRecords
}

function latencyOf(values: number[]): Latency {
  const s = sorted(values)
  return { p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? Number.NaN }
}

/** Arrivals that deliver one of `triggers`' events; the floor (no triggers) owns every arrival. */
function ownArrivals(records: ReceivedRecords, triggers: Trigger[]): number[] {
  if (triggers.length === 0) return records.times.map((_, i) => i)
  const events = new Set(triggers.map((t) => t.contactId))
  return records.times.flatMap((_, i) => (events.has(records.contacts[i]!) ? [i] : []))
}

function summarize(records: ReceivedRecords, triggers: Trigger[], startedAt: number, cpu: Cpu): PhaseResult {
  const answeredAt = new Map(triggers.map((t) => [t.contactId, t.answeredAt]))
  const own = ownArrivals(records, triggers)
  const latencies: number[] = []
  const seen = new Set<string>()
  let duplicates = 0
  let last = startedAt
  for (const i of own) {
    const key = `${records.paths[i]}:${records.contacts[i]}`
    if (seen.has(key)) duplicates++
    seen.add(key)
    last = Math.max(last, records.times[i]!)
    if (triggers.length > 0) latencies.push(records.times[i]! - answeredAt.get(records.contacts[i]!)!)
  }
  const seconds = (last - startedAt) / 1000
  const deliveries = seen.size
  return {
    deliveries,
    seconds,
    deliveriesPerSecond: deliveries / seconds,
    latency: latencyOf(latencies),
    cpu,
    duplicates,
    strays: records.times.length - own.length,
    newConnections: records.connections,
    triggers,
    records,
  }
}

/** Answer -> row, row -> attempt, attempt -> arrival for each delivery of the phase, from the store. */
function splitOf(phase: PhaseResult, byKey: Map<string, RecordedDelivery>, webhookIndex: Map<string, number>): PhaseResult['split'] {
  const answeredAt = new Map(phase.triggers!.map((t) => [t.contactId, t.answeredAt]))
  const arrivals = new Map<string, number>()
  const { paths, contacts, times } = phase.records!
  for (let i = 0; i < times.length; i++) arrivals.set(`${paths[i]}:${contacts[i]}`, times[i]!)
  const fanOut: number[] = []
  const queue: number[] = []
  const send: number[] = []
  for (const delivery of byKey.values()) {
    const answered = answeredAt.get(delivery.contactId)
    if (answered === undefined || delivery.firstAttemptAt === undefined) continue
    const arrival = arrivals.get(`${webhookIndex.get(delivery.webhookId)}:${delivery.contactId}`)
    fanOut.push(delivery.createdAt - answered)
    queue.push(delivery.firstAttemptAt - delivery.createdAt)
    if (arrival !== undefined) send.push(arrival - delivery.firstAttemptAt)
  }
  return { fanOut: latencyOf(fanOut), queue: latencyOf(queue), send: latencyOf(send) }
}

/** Every PROBE_EVERY_MS, one GET /v1/account after another: how a request unrelated to webhooks fares. */
const PROBE_EVERY_MS = 20
const PROBE_IDLE_MS = 3000

function probeRequests(server: RunningServer, key: string): { stop(): Promise<Latency & { count: number }> } {
  let running = true
  const latencies: number[] = []
  const done = (async () => {
    while (running) {
      const started = now()
      await call(`${server.url}/v1/account`, 'GET', undefined, key)
      latencies.push(now() - started)
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return { ...latencyOf(latencies), count: latencies.length }
    },
  }
}

interface RunResult {
  floor: PhaseResult
  burst: PhaseResult
  /** GET /v1/account on the idle server just before the burst, and during it. */
  requests: { idle: Latency & { count: number }; burst: Latency & { count: number } }
  paced: PhaseResult | undefined
  ratio: number
  concurrency: number
  check: { deliveries: number; notDelivered: number; multipleAttempts: number; logsNotOne: number }
}

async function runPhase(receiver: Receiver, server: RunningServer | undefined, expected: number, drive: () => Promise<Trigger[]>): Promise<PhaseResult> {
  const { arrived } = await receiver.expect(expected, maxWaitMs)
  const before = markCpu(server, receiver)
  const startedAt = now()
  const triggers = await drive()
  await arrived
  // A repeated attempt of an earlier phase counts towards `expected`: wait for this phase's own.
  let records = await receiver.records()
  const distinct = (r: ReceivedRecords) => new Set(ownArrivals(r, triggers).map((i) => `${r.paths[i]}:${r.contacts[i]}`)).size
  while (distinct(records) < expected) {
    if (now() - startedAt > maxWaitMs) throw new Error(`only ${distinct(records)} of ${expected} deliveries arrived within ${maxWaitMs / 1000} s`)
    await new Promise((r) => setTimeout(r, 100))
    records = await receiver.records()
  }
  const after = markCpu(server, receiver)
  return summarize(records, triggers, startedAt, cpuSince(before, after, expected))
}

async function oneRun(run: number, build: Build, ca: Awaited<ReturnType<typeof createTestCa>>, concurrency: number): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'))
  let fresh: FreshDatabase | undefined
  let database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }
  if (store === 'postgres') {
    fresh = await createFreshDatabase(ADMIN_URL, 'bench_webhooks')
    database = { kind: 'postgres', url: fresh.url }
  } else {
    database = { kind: 'sqlite', path: join(dir, 'bench.db') }
  }
  const caFile = join(dir, 'ca.pem')
  writeFileSync(caFile, ca.caPem)
  const receiver = await Receiver.start(ca)
  let server: RunningServer | undefined
  try {
    server = await startServer({
      mode: 'dist',
      entry: build.entry,
      nodeArgs: flags['node-arg'] ?? [],
      env: {
        DATABASE_URL: database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url,
        JWT_SECRET,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: '1000000',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        NODE_EXTRA_CA_CERTS: caFile,
        ...(flags['outbox-poll-ms'] ? { OUTBOX_POLL_MS: flags['outbox-poll-ms'] } : {}),
      },
    })
    const key = await newKey(server)
    const webhookIds = await createWebhooks(server, key, receiver)
    const live = server

    // Warm-up, not counted: one event through the server, one round of the floor.
    const warm = await receiver.expect(webhookCount, maxWaitMs)
    await trigger(live, key)
    await warm.arrived
    const floorClient = new Floor((i) => receiver.url(`/w/${i}`), webhookCount, concurrency, concurrency, ca.caPem)
    const warmFloor = await receiver.expect(webhookCount, maxWaitMs)
    await floorClient.send(1)
    await warmFloor.arrived

    const total = eventCount * webhookCount
    const quiet = async (phase: string) => {
      const q = await waitQuiet(Number(flags['wait-quiet']), Number(flags.noise))
      console.log(`  run ${run}, ${phase}: machine ${q.quiet ? 'quiet' : 'still busy'} (${Math.round(q.busyPct)}% of a core) after ${q.waitedS.toFixed(0)} s`)
    }

    await quiet('floor')
    const floor = await runPhase(receiver, live, total, async () => {
      await floorClient.send(eventCount)
      return []
    })
    await floorClient.close()

    await quiet('burst')
    const idleProbe = probeRequests(live, key)
    await new Promise((r) => setTimeout(r, PROBE_IDLE_MS))
    const idleRequests = await idleProbe.stop()
    const burstProbe = probeRequests(live, key)
    const burst = await runPhase(receiver, live, total, async () => {
      const triggers: Trigger[] = []
      for (let e = 0; e < eventCount; e++) triggers.push(await trigger(live, key))
      return triggers
    })
    const requests = { idle: idleRequests, burst: await burstProbe.stop() }

    let paced: PhaseResult | undefined
    if (!flags['no-paced']) {
      await quiet('paced')
      paced = await runPhase(receiver, live, total, async () => {
        const triggers: Trigger[] = []
        for (let e = 0; e < eventCount; e++) {
          triggers.push(await trigger(live, key))
          // Closed loop: the next event once this one has reached every webhook, after a pause.
          while ((await receiver.count()) < (e + 1) * webhookCount) await new Promise((r) => setTimeout(r, 5))
          await new Promise((r) => setTimeout(r, pauseMs))
        }
        return triggers
      })
    }

    await server.stop()
    const recorded = await recordedDeliveries(database)
    const webhookIndex = new Map(webhookIds.map((id, i) => [id, i]))
    const byKey = new Map(recorded.map((d) => [`${d.webhookId}:${d.contactId}`, d]))
    burst.split = splitOf(burst, byKey, webhookIndex)
    if (paced) paced.split = splitOf(paced, byKey, webhookIndex)
    const check = {
      deliveries: recorded.length,
      notDelivered: recorded.filter((d) => !d.delivered).length,
      multipleAttempts: recorded.filter((d) => d.attempts !== 1).length,
      logsNotOne: recorded.filter((d) => d.logs !== 1).length,
    }
    for (const phase of [floor, burst, paced]) {
      if (phase) {
        delete phase.records
        delete phase.triggers
      }
    }
    return { floor, burst, requests, paced, ratio: burst.deliveriesPerSecond / floor.deliveriesPerSecond, concurrency, check }
  } finally {
    await server?.stop()
    await receiver.stop()
    await fresh?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

function latencyText(l: Latency): string {
  return `p50 ${ms(l.p50)}, p99 ${ms(l.p99)}, max ${ms(l.max)}`
}

function cpuText(c: Cpu): string {
  const pg = c.postgres === undefined ? '' : `, PostgreSQL ${pct(c.postgres)} (${c.postgresMicrosPerDelivery?.toFixed(0)} µs/delivery)`
  const server = c.serverMicrosPerDelivery === undefined ? '' : ` (${c.serverMicrosPerDelivery.toFixed(0)} µs/delivery)`
  return `CPU (% of one core): server ${pct(c.server)}${server}${pg}, receiver ${pct(c.receiver)}, bench ${pct(c.bench)}, other ${pct(c.other)}`
}

function report(run: number, r: RunResult): void {
  console.log(`  run ${run}:`)
  console.log(`    floor (bare undici, ${r.concurrency} in flight): ${int(r.floor.deliveries)} in ${r.floor.seconds.toFixed(2)} s = ${int(r.floor.deliveriesPerSecond)}/s; ${cpuText(r.floor.cpu)}`)
  console.log(`    burst: ${int(r.burst.deliveries)} in ${r.burst.seconds.toFixed(2)} s = ${int(r.burst.deliveriesPerSecond)}/s, ratio ${r.ratio.toFixed(3)}; latency ${latencyText(r.burst.latency)}`)
  if (r.burst.split) console.log(`      fan-out ${latencyText(r.burst.split.fanOut)}; queue ${latencyText(r.burst.split.queue)}; send ${latencyText(r.burst.split.send)}`)
  console.log(`      ${cpuText(r.burst.cpu)}; ${r.burst.newConnections} new connections, ${r.burst.duplicates} duplicates, ${r.burst.strays} strays`)
  console.log(`      GET /v1/account meanwhile (${int(r.requests.burst.count)}): ${latencyText(r.requests.burst)}; on the idle server just before (${int(r.requests.idle.count)}): ${latencyText(r.requests.idle)}`)
  if (r.paced) {
    console.log(`    one at a time (${pauseMs} ms between): ${int(r.paced.deliveries)} in ${r.paced.seconds.toFixed(2)} s; latency ${latencyText(r.paced.latency)}`)
    if (r.paced.split) console.log(`      fan-out ${latencyText(r.paced.split.fanOut)}; queue ${latencyText(r.paced.split.queue)}; send ${latencyText(r.paced.split.send)}`)
    console.log(`      ${cpuText(r.paced.cpu)}; ${r.paced.duplicates} duplicates, ${r.paced.strays} strays`)
  }
  console.log(`    store: ${int(r.check.deliveries)} deliveries, ${r.check.notDelivered} not delivered, ${r.check.multipleAttempts} with other than one attempt, ${r.check.logsNotOne} with other than one log entry`)
}

async function main(): Promise<void> {
  const pgVersion = store === 'postgres' ? ` (PostgreSQL ${await serverVersion(ADMIN_URL)})` : ''
  const build = flags.entry ? { entry: resolve(flags.entry), code: `entry ${flags.entry}` } : flags.commit ? buildCommit(flags.commit) : { entry: buildServer(), code: 'the working tree' }
  const concurrency = flags.concurrency ? Number(flags.concurrency) : serverConcurrency(build.entry)
  const poll = flags['outbox-poll-ms'] ? `; OUTBOX_POLL_MS=${flags['outbox-poll-ms']}` : ''
  console.log(`webhooks benchmark: ${int(webhookCount)} webhooks x ${eventCount} events on ${store}${pgVersion}; ${build.code}; Node ${process.version}, ${cpus().length} CPUs; floor ${concurrency} in flight${poll}`)
  const ca = await createTestCa(['127.0.0.1', 'localhost'])
  const results: RunResult[] = []
  for (let run = 1; run <= runs; run++) {
    const result = await oneRun(run, build, ca, concurrency)
    report(run, result)
    results.push(result)
  }
  const ratio = median(results.map((r) => r.ratio))
  const p99 = median(results.map((r) => (r.paced ?? r.burst).latency.p99))
  console.log(`\nmedian of ${runs} run(s) on ${store}: floor ${int(median(results.map((r) => r.floor.deliveriesPerSecond)))}/s; server (burst) ${int(median(results.map((r) => r.burst.deliveriesPerSecond)))}/s; ratio ${ratio.toFixed(3)} (target >= ${TARGET_RATIO}: ${ratio >= TARGET_RATIO ? 'MET' : 'MISSED'})`)
  console.log(`  burst latency p50 ${ms(median(results.map((r) => r.burst.latency.p50)))}, p99 ${ms(median(results.map((r) => r.burst.latency.p99)))}`)
  console.log(`  GET /v1/account during the burst p50 ${ms(median(results.map((r) => r.requests.burst.p50)))}, p99 ${ms(median(results.map((r) => r.requests.burst.p99)))}; idle p50 ${ms(median(results.map((r) => r.requests.idle.p50)))}, p99 ${ms(median(results.map((r) => r.requests.idle.p99)))}`)
  if (results[0]?.paced) console.log(`  one-at-a-time latency p50 ${ms(median(results.map((r) => r.paced!.latency.p50)))}, p99 ${ms(p99)} (target < ${TARGET_P99_MS} ms: ${p99 < TARGET_P99_MS ? 'MET' : 'MISSED'})`)
  if (flags.json) writeFileSync(flags.json, JSON.stringify({ store, webhookCount, eventCount, pauseMs, code: build.code, results }, null, 2))
  if (results.some((r) => r.check.notDelivered > 0 || r.burst.duplicates > 0 || (r.paced?.duplicates ?? 0) > 0)) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
