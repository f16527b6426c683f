/**
 * bench:metrics — what Prometheus metrics cost on the request path (issue 12, item 7).
 *
 * Starts the compiled server twice on SQLite, each on a file of its own: once with
 * METRICS_ENABLED=false, once with METRICS_ENABLED=true and a scraper reading /metrics
 * every --scrape-interval seconds while that server is under load (a Prometheus would).
 * Each round loads both at the same time (paired: the shared machine's other work slows
 * both alike; --sequential measures one at a time instead, in alternating order) with:
 *
 *   GET /v1/account with an API key            (auth, rate limiter, one store read; the request metrics)
 *   POST /v1/sms/send, one recipient, sandbox  (the send, plus the dispatcher and receipts
 *                                               working behind it: the messaging counters)
 *
 * and reports the median requests/s of each, and enabled ÷ disabled. Target: the ratio at
 * least 0.95 (metrics cost under 5 % of requests/s).
 *
 *   npm run bench:metrics
 *   npm run bench:metrics -- --rounds 5 --duration 8 --warmup 3 --connections 20 --scrape-interval 5 [--sequential]
 *   npm run bench:metrics -- --a-a     # calibration: both servers with metrics off
 *
 * The machine is shared: before each run the bench waits up to --wait-quiet seconds for a
 * quiet second, and reports for each run the CPU used by other work ("other"), which is
 * noise the ratio cannot tell from cost; the server's CPU time per request is reported
 * beside requests/s because it suffers less from that noise.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { flag, nonNegativeNumber, parseFlags } from '../lib/flags.js'
import { fmt, measure, median, table, waitQuiet, type Measurement } from '../lib/load.js'
import { machineCpuSeconds, processCpuSeconds, buildServer, startServer, type RunningServer, Cleanups } from '../lib/server.js'

// Numbers as text, checked below once --help has had its turn.
const { flags } = parseFlags({
  rounds: flag.string('5'),
  duration: flag.string('8'),
  warmup: flag.string('3'),
  connections: flag.string('20'),
  'scrape-interval': flag.string('5'),
  'wait-quiet': flag.string('20'),
  sequential: flag.boolean(),
  'a-a': flag.boolean(),
  noise: flag.string('25'),
  help: flag.boolean(),
})
if (flags.help) {
  console.log('usage: npm run bench:metrics -- [--rounds 5] [--duration 8] [--warmup 3] [--connections 20] [--scrape-interval 5] [--wait-quiet 20] [--noise 25] [--sequential] [--a-a]')
  process.exit(0)
}
const options = {
  rounds: nonNegativeNumber('rounds', flags.rounds),
  duration: nonNegativeNumber('duration', flags.duration),
  warmup: nonNegativeNumber('warmup', flags.warmup),
  connections: nonNegativeNumber('connections', flags.connections),
  scrapeIntervalS: nonNegativeNumber('scrape-interval', flags['scrape-interval']),
  waitQuiet: nonNegativeNumber('wait-quiet', flags['wait-quiet']),
  noise: nonNegativeNumber('noise', flags.noise),
  sequential: flags.sequential,
  // Calibration: the second server runs with metrics off too, so on/off shows what the
  // bench itself reads as a difference between two identical servers.
  aa: flags['a-a'],
}
const TARGET_RATIO = 0.95
const METRICS_TOKEN = randomBytes(24).toString('base64url')
const log = (message: string) => process.stderr.write(`${message}\n`)

type VariantName = 'disabled' | 'enabled'
type Endpoint = 'account' | 'send'
interface Variant {
  name: VariantName
  server: RunningServer
  fullKey: string
  playgroundKey: string
}

const cleanups = new Cleanups(log)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanups.run().finally(() => process.exit(130)))

async function call(base: string, method: string, path: string, token: string | undefined, body: unknown, expected: number): Promise<unknown> {
  const response = await fetch(base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}, expected ${expected}: ${text}`)
  return (response.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as unknown) : text
}

async function setUp(name: VariantName, entry: string): Promise<Variant> {
  const dir = mkdtempSync(join(tmpdir(), `bench-metrics-${name}-`))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer({
    mode: 'dist',
    entry,
    env: {
      DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      LOGIN_ATTEMPTS_PER_MINUTE: '1000',
      JWT_SECRET: randomBytes(32).toString('base64url'),
      METRICS_ENABLED: name === 'enabled' && !options.aa ? 'true' : 'false',
      ...(name === 'enabled' && !options.aa ? { METRICS_TOKEN } : {}),
    },
  })
  cleanups.push(() => server.stop())
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`
  const password = randomBytes(18).toString('base64url')
  await call(server.url, 'POST', '/v1/auth/signup', undefined, { email, password, accountName: 'bench' }, 201)
  const { token: session } = (await call(server.url, 'POST', '/v1/auth/login', undefined, { email, password }, 200)) as { token: string }
  const fullKey = (await call(server.url, 'POST', '/v1/keys', session, { name: 'bench:metrics', permission: 'Full' }, 201)) as string
  const playgroundKey = (await call(server.url, 'POST', '/v1/keys', session, { name: 'bench:metrics sends', permission: 'Playground' }, 201)) as string
  const exposes = name === 'enabled' && !options.aa
  await call(server.url, 'GET', '/metrics', exposes ? METRICS_TOKEN : undefined, undefined, exposes ? 200 : 404)
  log(`${name}: server at ${server.url} (pid ${server.pid}), /metrics ${exposes ? 'answers 200' : 'answers 404'}`)
  return { name, server, fullKey, playgroundKey }
}

const SEND_BODY = JSON.stringify({ recipients: ['+14155550123'], content: 'Your code is 123456', senderId: 'Acme' })

/** measure() for a POST with a body: requests/s, server CPU per request and the machine's other load. */
async function measureSend(variant: Variant, durationSeconds: number): Promise<Measurement> {
  const serverBefore = processCpuSeconds(variant.server.pid)
  const machineBefore = machineCpuSeconds()
  const selfBefore = process.cpuUsage()
  const wallBefore = process.hrtime.bigint()
  const result = await autocannon({
    url: `${variant.server.url}/v1/sms/send`,
    method: 'POST',
    headers: { authorization: `Bearer ${variant.playgroundKey}`, 'content-type': 'application/json' },
    body: SEND_BODY,
    connections: options.connections,
    duration: durationSeconds,
    timeout: 10,
  })
  const wall = Number(process.hrtime.bigint() - wallBefore) / 1e9
  const serverSeconds = (processCpuSeconds(variant.server.pid) ?? 0) - (serverBefore ?? 0)
  const self = process.cpuUsage(selfBefore)
  const selfSeconds = (self.user + self.system) / 1e6
  const machineAfter = machineCpuSeconds()
  const machineSeconds = machineBefore && machineAfter ? machineAfter.busy - machineBefore.busy : undefined
  const statusCodes: Record<string, number> = {}
  for (const [code, stat] of Object.entries(result.statusCodeStats)) statusCodes[code] = stat.count
  const perCore = (seconds: number) => (seconds / wall) * 100
  return {
    requestsPerSecond: result.requests.total / result.duration,
    completed: result.requests.total,
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: result.latency.mean },
    statusCodes,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: result.duration,
    serverCpu: perCore(serverSeconds),
    loadGeneratorCpu: perCore(selfSeconds),
    serverMicrosPerRequest: result.requests.total === 0 ? undefined : (serverSeconds * 1e6) / result.requests.total,
    storeMicrosPerRequest: undefined,
    storeCpu: undefined,
    otherCpu: machineSeconds === undefined ? undefined : Math.max(0, perCore(machineSeconds - serverSeconds - selfSeconds)),
    machineBusy: undefined,
  }
}

async function run(variant: Variant, endpoint: Endpoint, durationSeconds: number): Promise<Measurement> {
  // The enabled server is scraped while it works, as Prometheus would scrape it.
  const scraper =
    variant.name === 'enabled' && !options.aa && options.scrapeIntervalS > 0
      ? setInterval(() => void call(variant.server.url, 'GET', '/metrics', METRICS_TOKEN, undefined, 200).catch((err: unknown) => log(`scrape failed: ${(err as Error).message}`)), options.scrapeIntervalS * 1000)
      : undefined
  try {
    return endpoint === 'account'
      ? await measure({ url: `${variant.server.url}/v1/account`, headers: { authorization: `Bearer ${variant.fullKey}` }, connections: options.connections, pipelining: 1, durationSeconds, serverPid: variant.server.pid })
      : await measureSend(variant, durationSeconds)
  } finally {
    clearInterval(scraper)
  }
}

const IDLE_S = 15
const SCRAPES = 20

/**
 * What metrics cost when no request comes (timers, the event-loop monitors, the GC
 * observer), and what one scrape costs: CPU time from /proc, which other work on the
 * machine disturbs far less than requests/s.
 */
async function backgroundCost(variants: Variant[]): Promise<{ idleMsPerS: Record<VariantName, number>; scrapeMs: number }> {
  const before = variants.map((v) => processCpuSeconds(v.server.pid) ?? 0)
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000))
  const idleMsPerS = { disabled: 0, enabled: 0 }
  variants.forEach((v, i) => (idleMsPerS[v.name] = (((processCpuSeconds(v.server.pid) ?? 0) - before[i]!) / IDLE_S) * 1000))
  const enabled = variants.find((v) => v.name === 'enabled')!
  // /proc counts in 10 ms ticks: the scrapes are timed together.
  const cpuBefore = processCpuSeconds(enabled.server.pid) ?? 0
  for (let i = 0; i < SCRAPES && !options.aa; i++) await call(enabled.server.url, 'GET', '/metrics', METRICS_TOKEN, undefined, 200)
  return { idleMsPerS, scrapeMs: (((processCpuSeconds(enabled.server.pid) ?? 0) - cpuBefore) * 1000) / SCRAPES }
}

async function main(): Promise<void> {
  log('compiling src/ to .bench/metrics/dist')
  const entry = buildServer('metrics/dist')
  const variants = [await setUp('disabled', entry), await setUp('enabled', entry)]
  const results: Record<VariantName, Record<Endpoint, Measurement[]>> = {
    disabled: { account: [], send: [] },
    enabled: { account: [], send: [] },
  }
  const quiet: number[] = []
  const background = await backgroundCost(variants)
  for (const variant of variants) {
    for (const endpoint of ['account', 'send'] as const) if (options.warmup > 0) await run(variant, endpoint, options.warmup)
  }
  const record = (round: number, variant: Variant, endpoint: Endpoint, m: Measurement, calm: { quiet: boolean; busyPct: number }) => {
    if (m.non2xx > 0 || m.errors > 0 || m.timeouts > 0) throw new Error(`${variant.name} ${endpoint}: ${m.non2xx} non-2xx (${JSON.stringify(m.statusCodes)}), ${m.errors} errors, ${m.timeouts} timeouts`)
    results[variant.name][endpoint].push(m)
    log(`round ${round} ${endpoint.padEnd(7)} ${variant.name.padEnd(8)} ${fmt.rps(m.requestsPerSecond).padStart(6)} req/s  p99 ${fmt.ms(m.latencyMs.p99)}  server ${fmt.pct(m.serverCpu)} (${m.serverMicrosPerRequest?.toFixed(0)} µs/req)  other ${fmt.pct(m.otherCpu)}${calm.quiet ? '' : `  (not quiet before: ${Math.round(calm.busyPct)}%)`}`)
  }
  for (let round = 1; round <= options.rounds; round++) {
    // Alternating order: a drift in the machine's load hits both variants alike.
    const order = round % 2 === 1 ? variants : [...variants].reverse()
    for (const endpoint of ['account', 'send'] as const) {
      if (options.sequential) {
        for (const variant of order) {
          const calm = await waitQuiet(options.waitQuiet, options.noise)
          quiet.push(calm.busyPct)
          record(round, variant, endpoint, await run(variant, endpoint, options.duration), calm)
        }
      } else {
        // Paired (the default): both servers under the same load at the same time, so
        // whatever else the shared machine runs slows both alike; each gets about half the
        // load generator and competes for the same cores, and the ratio of their rates is
        // the ratio of their costs.
        const calm = await waitQuiet(options.waitQuiet, options.noise)
        quiet.push(calm.busyPct)
        const measured = await Promise.all(order.map((variant) => run(variant, endpoint, options.duration)))
        order.forEach((variant, i) => record(round, variant, endpoint, measured[i]!, calm))
      }
    }
  }

  const rows: string[][] = []
  let worst = Infinity
  for (const endpoint of ['account', 'send'] as const) {
    const rps = (name: VariantName) => median(results[name][endpoint].map((m) => m.requestsPerSecond))
    const micros = (name: VariantName) => median(results[name][endpoint].map((m) => m.serverMicrosPerRequest ?? Number.NaN))
    const ratio = rps('enabled') / rps('disabled')
    worst = Math.min(worst, ratio)
    const perRound = results.enabled[endpoint].map((m, i) => fmt.ratio(m.requestsPerSecond / results.disabled[endpoint][i]!.requestsPerSecond)).join(' ')
    rows.push([
      endpoint === 'account' ? 'GET /v1/account (API key)' : 'POST /v1/sms/send (sandbox)',
      fmt.rps(rps('disabled')),
      fmt.rps(rps('enabled')),
      fmt.ratio(ratio),
      perRound,
      `${micros('disabled').toFixed(0)} / ${micros('enabled').toFixed(0)} (${fmt.ratio(micros('enabled') / micros('disabled'))})`,
      `${fmt.pct(median(results.disabled[endpoint].map((m) => m.otherCpu ?? 0)))} / ${fmt.pct(median(results.enabled[endpoint].map((m) => m.otherCpu ?? 0)))}`,
    ])
  }
  if (options.aa) console.log('\nA/A CALIBRATION (--a-a): both servers run with METRICS_ENABLED=false; "on" is the second one')
  console.log(`\nbench:metrics on SQLite, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}; ${options.rounds} rounds x ${options.duration} s, ${options.sequential ? 'one server at a time, alternating' : 'both servers at once (paired)'}, ${options.connections} connections each, /metrics scraped every ${options.scrapeIntervalS} s on the enabled server`)
  console.log(table(['', 'req/s off', 'req/s on', 'on/off', 'per round', 'server µs/req off / on (on/off)', 'other CPU off/on'], rows))
  console.log(`background, both servers idle for ${IDLE_S} s side by side: ${background.idleMsPerS.disabled.toFixed(1)} ms of CPU per second with metrics off, ${background.idleMsPerS.enabled.toFixed(1)} with them on (no scrape); one scrape of /metrics: ${background.scrapeMs.toFixed(1)} ms of CPU (mean of ${SCRAPES})`)
  console.log(`machine busy in the quiet second before each run (% of one core): median ${Math.round(median(quiet))}, max ${Math.round(Math.max(...quiet))}`)
  console.log(`target: on/off at least ${TARGET_RATIO} (metrics cost under 5 % of requests/s): ${worst >= TARGET_RATIO ? 'met' : 'NOT met'} (worst ${fmt.ratio(worst)})`)
}

try {
  await main()
} finally {
  await cleanups.run()
}
