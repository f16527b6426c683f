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
 *
 * Parts: run.ts (one run and its phases), measure.ts (rates, latencies and CPU of a phase),
 * and the floor, receiver and store helpers beside them.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join, resolve } from 'node:path'
import { createTestCa } from '../../test/support/tls.js'
import { flag, parseFlags } from '../lib/flags.js'
import { serverVersion } from '../lib/postgres.js'
import { buildServer } from '../lib/server.js'
import { buildCommit } from '../messaging/build.js'
import { median, type Cpu, type Latency } from './measure.js'
import { oneRun, type RunResult, type RunSettings } from './run.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  runs: flag.number(1),
  webhooks: flag.number(1000),
  events: flag.number(100),
  pause: flag.number(100),
  'no-paced': flag.boolean(),
  // As given: absent or empty means the server's, read from the build.
  concurrency: flag.string(),
  commit: flag.string(),
  entry: flag.string(),
  'wait-quiet': flag.number(60),
  noise: flag.number(40),
  'max-wait': flag.number(600),
  json: flag.string(),
  'outbox-poll-ms': flag.string(),
  'node-arg': flag.list(),
})
const store = flags.store === 'postgres' ? 'postgres' : 'sqlite'
const runs = flags.runs
const webhookCount = flags.webhooks
const eventCount = flags.events
const pauseMs = flags.pause
const maxWaitMs = flags['max-wait'] * 1000
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const TARGET_RATIO = 0.5
const TARGET_P99_MS = 250
const settings: RunSettings = {
  store,
  webhookCount,
  eventCount,
  pauseMs,
  maxWaitMs,
  paced: !flags['no-paced'],
  waitQuietS: flags['wait-quiet'],
  noise: flags.noise,
  outboxPollMs: flags['outbox-poll-ms'],
  nodeArgs: flags['node-arg'],
  adminUrl: ADMIN_URL,
}

const int = (x: number) => (Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en'))
const ms = (x: number) => (Number.isNaN(x) ? '-' : `${x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en')} ms`)
const pct = (x: number | undefined) => (x === undefined ? '-' : `${Math.round(x)}%`)

/** The delivery worker's overall bound on attempts in flight, as compiled (WORKER.maxInFlight in webhooks.ts). */
function serverConcurrency(entry: string): number {
  const source = readFileSync(join(resolve(entry, '..'), 'modules', 'webhooks', 'webhooks.js'), 'utf8')
  const match = /maxInFlight:\s*(\d+)/.exec(source)
  if (!match) throw new Error('could not read maxInFlight from the compiled webhooks.js; pass --concurrency')
  return Number(match[1])
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
    const result = await oneRun(run, build, ca, concurrency, settings)
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
