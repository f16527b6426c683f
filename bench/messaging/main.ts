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
 * --routes mixed: the contacts are US, FR, GB, DE and AU numbers (five equal blocks, in
 * their own cached store), and before the broadcast the server is given three simulator
 * connections and three routes of different prices through the admin API (routing.ts):
 * `+` -> [sim-a] at 1 (US, AU), `+4` -> [sim-b] at 2 (GB, DE), `+33` -> [sim-c] at 3 (FR).
 * The send then prices every recipient in SQL (a CASE over the prefixes), and so does the
 * floor. Either mode checks the credits taken against Σ price × segments and counts the
 * recipients per connection in the store at completion; a mismatch is printed in capitals
 * and fails the run (exit code 1).
 *
 * --message personalised: the broadcast's message is the template 'Hi {{firstName}}, flash
 * sale in {{attributes.city}} today only: …' (message.ts), which the server renders per
 * recipient in SQL while queueing (message_recipients.content and .segments). The generated
 * names and cities include characters outside GSM-7 (Zoë, Łukasz, São Paulo, Kraków), so
 * the texts are a mix of GSM-7 in one segment and UCS-2 in two. The expected credits are
 * computed in the bench: Σ over the generated contacts of its route price × analyzeSms(its
 * rendered text).segments; the answer, the broadcast at completion, the balance debited and
 * the store (Σ price × coalesce(recipient's segments, message's)) must all equal it. The
 * floor stays the bare INSERT … SELECT (it renders nothing), so send / floor includes the
 * rendering and counting.
 *
 * Targets (issue): (a) under 20 s on SQLite, (b) at least 5,000 recipients/s, (c) p99 under 20 ms;
 * during the broadcast, (d) p99 under 20 ms and max under 100 ms, (e) p99 under 20 ms.
 *
 *   npm run bench:messaging                                # SQLite
 *   npm run bench:messaging -- --store postgres            # PostgreSQL on 127.0.0.1:5432 (BENCH_DATABASE_URL)
 *   npm run bench:messaging -- --contacts 100000 --duration 10   # a quick try
 *   npm run bench:messaging -- --routes mixed              # five countries, three connections, three prices
 *   npm run bench:messaging -- --message personalised      # each recipient's own text, rendered in SQL
 *
 * Flags: --routes single|mixed (single: all US numbers through the default connection, as before)
 *        --message plain|personalised (plain: one text for every recipient, as before; personalised:
 *          first name and city filled in per recipient, GSM-7 and UCS-2, 1 or 2 segments)
 *        --contacts 1000000  --runs 1 (each on a fresh copy; medians printed)  --duration 30
 *        --rate 200  --connections 10 (autocannon)  --warmup 3  --interval 25  --idle 3
 *        --delivery-delay 100  --batch-size N (DISPATCH_BATCH_SIZE; the server's default when absent)
 *        --concurrency N (DISPATCH_CONCURRENCY; the server's default when absent)
 *        --max-wait 900 (seconds for (b); past it the rates so far are printed and (c) runs on a fresh copy)
 *        --commit REV (build src/ of that commit, read with git archive)  --entry FILE (a compiled main.js as it is)
 *        --wait-quiet 60 --noise 50 (before each run, wait up to 60 s for a second with the machine under 50% of a core busy)
 *        --no-paced (skip the evenly paced repeat of (c))  --no-during (skip (e))  --refresh (prepare the store again)
 *        --probes apart|inline (apart: (d) and (e) from a process of their own, probe-process.ts, so that
 *          the bench's own polling and bookkeeping do not delay them; inline: from the bench's process)
 *        --probe-priority=N (apart only: the probe process's nice value, -20 to 19; below 0 needs root)
 *        --probe-liveness (beside (d), GET /healthz at the same interval: the server's answer without the store)
 *        --server-priority=N (the server's threads' nice value once it is ready, -20 to 19; below 0 needs root:
 *          on one machine with the store, whether the server's own work meets (d) and (e) when it gets a core first;
 *          under autogroup scheduling a nice value orders threads only within their session's group, so this
 *          counts with --shared-session, against the bench, or where the kernel does not group by session)
 *        --shared-session (the server in the bench's session, as before; by default it has a session of its
 *          own, and so, under the kernel's autogroup scheduling, its own share of the CPU, as a service would:
 *          StartOptions.ownSession in bench/lib/server.ts; the probe process of --probes apart always has its own)
 *        --json FILE (every figure, and every probe of (d) with its time)
 *        --node-arg ARG (repeatable, for the server; e.g. --node-arg=--cpu-prof --node-arg=--cpu-prof-dir=DIR)
 *
 * Parts: run.ts (one run), cpu.ts (CPU accounting), report.ts (the figures against the
 * targets), routing.ts (--routes), message.ts (--message), and the store, floor, contacts, probe and build helpers beside them.
 *
 * The contacts are written once straight into the store (not through the import, which
 * bench:audience measures) and kept: a SQLite file in .bench/messaging/stores, or a
 * template database on the PostgreSQL server; each run works on its own copy. The
 * server is compiled to .bench/messaging (apart from the other benchmarks' .bench/dist)
 * and runs as a child process.
 */
import { writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { flag, parseFlags, positiveInteger } from '../lib/flags.js'
import { serverVersion } from '../lib/postgres.js'
import { buildCommit, buildWorkingTree, schemaFingerprint } from './build.js'
import { SEGMENT, type RoutesMode } from './contacts.js'
import { int } from './format.js'
import { report, summarize } from './report.js'
import { MESSAGE_MODES, MESSAGES, type MessageMode } from './message.js'
import { describeMessage, describeRoutes, expectedOf } from './routing.js'
import type { ProbesWhere } from './probes-apart.js'
import { oneRun, type RunResult, type RunSettings } from './run.js'
import { preparePostgres, prepareSqlite } from './store.js'

const { flags } = parseFlags({
  store: flag.string('sqlite'),
  routes: flag.string('single'),
  message: flag.string('plain'),
  // Checked below: positive integers.
  contacts: flag.string('1000000'),
  runs: flag.string('1'),
  duration: flag.string('30'),
  rate: flag.string('200'),
  connections: flag.string('10'),
  warmup: flag.number(3),
  interval: flag.string('25'),
  idle: flag.number(3),
  'delivery-delay': flag.number(100),
  // Handed to the server as given.
  'batch-size': flag.string(),
  concurrency: flag.string(),
  'max-wait': flag.string('900'),
  commit: flag.string(),
  entry: flag.string(),
  refresh: flag.boolean(),
  json: flag.string(),
  'node-arg': flag.list(),
  paced: flag.boolean(true),
  'wait-quiet': flag.number(60),
  noise: flag.number(50),
  'no-paced': flag.boolean(),
  'no-during': flag.boolean(),
  probes: flag.string('apart'),
  'probe-priority': flag.number(0),
  'probe-liveness': flag.boolean(),
  'server-priority': flag.number(0),
  'shared-session': flag.boolean(),
})

const store = flags.store
if (store !== 'sqlite' && store !== 'postgres') {
  console.error(`--store must be sqlite or postgres, got "${store}"`)
  process.exit(2)
}
const routes = flags.routes as RoutesMode
if (routes !== 'single' && routes !== 'mixed') {
  console.error(`--routes must be single or mixed, got "${flags.routes}"`)
  process.exit(2)
}
const message = flags.message as MessageMode
if (!MESSAGE_MODES.includes(message)) {
  console.error(`--message must be ${MESSAGE_MODES.join(' or ')}, got "${flags.message}"`)
  process.exit(2)
}
const contacts = positiveInteger('contacts', flags.contacts)
const runs = positiveInteger('runs', flags.runs)
const durationS = positiveInteger('duration', flags.duration)
const rate = positiveInteger('rate', flags.rate)
const connections = positiveInteger('connections', flags.connections)
const warmupS = flags.warmup || 0
const intervalMs = positiveInteger('interval', flags.interval)
const idleMs = (flags.idle || 0) * 1000
const deliveryDelayMs = flags['delivery-delay']
const maxWaitMs = positiveInteger('max-wait', flags['max-wait']) * 1000
const during = !flags['no-during']
const probes = flags.probes as ProbesWhere
if (probes !== 'apart' && probes !== 'inline') {
  console.error(`--probes must be apart or inline, got "${flags.probes}"`)
  process.exit(2)
}
/** A --*-priority flag's value: a nice value, -20 to 19. */
function niceValue(name: string, value: number): number {
  if (Number.isInteger(value) && value >= -20 && value <= 19) return value
  console.error(`--${name} must be a nice value from -20 to 19, got ${value}`)
  process.exit(2)
}
const serverPriority = niceValue('server-priority', flags['server-priority'])
const probePriority = niceValue('probe-priority', flags['probe-priority'])
if (probes === 'inline' && probePriority !== 0) {
  console.error('--probe-priority is for --probes apart only')
  process.exit(2)
}
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const settings: RunSettings = {
  store,
  contacts,
  durationS,
  rate,
  connections,
  warmupS,
  intervalMs,
  idleMs,
  deliveryDelayMs,
  maxWaitMs,
  during,
  probes,
  probePriority,
  probeLiveness: flags['probe-liveness'],
  serverPriority,
  ownSession: !flags['shared-session'],
  paced: flags.paced && !flags['no-paced'],
  waitQuietS: flags['wait-quiet'] || 0,
  noise: flags.noise || 50,
  nodeArgs: flags['node-arg'],
  batchSize: flags['batch-size'],
  concurrency: flags.concurrency,
  adminUrl: ADMIN_URL,
  routes,
  message,
  expected: expectedOf(routes, contacts, message),
}

async function main(): Promise<void> {
  const pgVersion = store === 'postgres' ? `PostgreSQL ${await serverVersion(ADMIN_URL)} on ${new URL(ADMIN_URL).host}` : 'SQLite (better-sqlite3)'
  console.log(`messaging benchmark: ${int(contacts)} contacts, --routes ${routes}, --message ${message}, on ${pgVersion}; Node ${process.version}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 1024 ** 3)} GiB`)
  const build = flags.entry ? { entry: flags.entry, code: `${flags.entry} as given` } : flags.commit ? buildCommit(flags.commit) : buildWorkingTree()
  console.log(`code: ${build.code}`)
  const fingerprint = schemaFingerprint(build.entry)
  const prepared = store === 'postgres' ? await preparePostgres(build.entry, ADMIN_URL, contacts, routes, fingerprint, flags.refresh) : await prepareSqlite(build.entry, contacts, routes, fingerprint, flags.refresh)
  console.log(`store: ${prepared.describe} (a copy per run); segment ${JSON.stringify(SEGMENT.rules)}; SIMULATOR_DELIVERY_DELAY_MS=${deliveryDelayMs}${flags['batch-size'] ? `, DISPATCH_BATCH_SIZE=${flags['batch-size']}` : ''}`)
  console.log(describeRoutes(routes, settings.expected))
  console.log(describeMessage(message, settings.expected))

  const results: RunResult[] = []
  for (let run = 1; run <= runs; run++) {
    const result = await oneRun(run, build, prepared, settings)
    report(`run ${run} of ${runs}`, result, settings)
    results.push(result)
  }
  summarize(results, runs, settings)
  if (flags.json) writeFileSync(flags.json, JSON.stringify({ store, routes, message, messageText: MESSAGES[message], contacts, code: build.code, deliveryDelayMs, rate, durationS, results }, null, 2))
  if (results.some((r) => r.send.non2xx + r.send.errors + r.send.timeouts > 0 || (r.paced?.failed ?? 0) > 0 || (r.during?.all.failed ?? 0) > 0 || !r.completion.completed || !r.routes.creditsOk || !r.routes.splitOk)) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
