/**
 * bench:auth — what API-key authentication costs per request.
 *
 * Measures requests/s and p99 latency of GET /v1/account with an API key (auth hook,
 * key lookup in the store, per-key rate limiter, the account read) against GET /healthz
 * (public, no limiter, no store) on the same server, and prints the ratio
 * authed req/s ÷ trivial req/s. The targets (issue 10): at least 0.6 on SQLite and 0.25 on
 * PostgreSQL, and (--breakdown) the key path at least 0.95 of the same route with a session JWT.
 *
 *   npm run bench:auth                                  # SQLite (a temporary file)
 *   npm run bench:auth -- --store postgres              # PostgreSQL, a fresh database on 127.0.0.1
 *   BENCH_DATABASE_URL=postgres://u@host/db npm run bench:auth   # PostgreSQL on that server
 *
 * Flags: --rounds 5  --duration 10  --warmup 5  --connections 50  --pipelining 1
 *        --server dist|tsx  --target 0.6|0.25  --session-target 0.95  --json FILE  --cpu-prof DIR
 *        --strict (exit 3 below target)
 *        --breakdown (also GET /readyz, one store query, and GET /v1/account with a session JWT)
 *        --entry FILE (run this compiled main.js as it is instead of building: to compare a variant)
 *        --commit REV (also build REV's src/ and measure it in the same rounds: "before" and "after")
 *        --wait-quiet 30  --noise 25  --retry-noisy 2 (see below)
 *
 * The machine is shared: before each round the bench waits up to --wait-quiet seconds
 * for a second in which the machine is busy less than --noise percent of one core, and
 * charges every run the CPU that neither the server, PostgreSQL nor autocannon used
 * ("other"). A round in which other work exceeded --noise is set aside and measured
 * again, up to --retry-noisy times; the report lists what was set aside.
 *
 * With --commit, two servers run side by side, each on a store of its own (a SQLite file,
 * or a PostgreSQL database), and each round measures both, in alternating order; only
 * one is under load at a time.
 *
 * The server is a child process (`node .bench/dist/main.js`, compiled first; or
 * `node --import tsx src/main.ts` with --server tsx); autocannon runs in this process,
 * so load generator and server have a core each on a 2-core machine (PostgreSQL, when
 * used, shares them).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { fmt, measure, median, problemsOf, table, waitQuiet, type Measurement } from './lib/load.js'
import { createFreshDatabase, serverVersion, type FreshDatabase } from './lib/postgres.js'
import { buildCommit, PROJECT_DIR, startServer, type RunningServer, type ServerMode, Cleanups } from './lib/server.js'

const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

const { values: flags } = parseArgs({
  options: {
    store: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    pipelining: { type: 'string', default: '1' },
    server: { type: 'string', default: 'dist' },
    target: { type: 'string' },
    'session-target': { type: 'string', default: '0.95' },
    commit: { type: 'string' },
    json: { type: 'string' },
    'cpu-prof': { type: 'string' },
    strict: { type: 'boolean', default: false },
    breakdown: { type: 'boolean', default: false },
    entry: { type: 'string' },
    'wait-quiet': { type: 'string', default: '30' },
    noise: { type: 'string', default: '25' },
    'retry-noisy': { type: 'string', default: '2' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
})

if (flags.help) {
  console.log(`usage: npm run bench:auth -- [--store sqlite|postgres] [--rounds 5] [--duration 10] [--warmup 5]
       [--connections 50] [--pipelining 1] [--server dist|tsx] [--target 0.6 (SQLite) | 0.25 (PostgreSQL)]
       [--session-target 0.95] [--json FILE] [--cpu-prof DIR] [--strict]
       [--breakdown] [--entry FILE] [--commit REV] [--wait-quiet 30] [--noise 25] [--retry-noisy 2]
env: BENCH_DATABASE_URL=postgres://... (implies --store postgres; a fresh database is created beside it and dropped)`)
  process.exit(0)
}

function positive(name: string, raw: string | undefined, integer = true): number {
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    console.error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got "${raw}"`)
    process.exit(2)
  }
  return value
}

function nonNegative(name: string, raw: string | undefined): number {
  return Number(raw) === 0 ? 0 : positive(name, raw)
}

const benchUrl = process.env.BENCH_DATABASE_URL?.trim() || undefined
const store = flags.store ?? (benchUrl ? 'postgres' : 'sqlite')
if (store !== 'sqlite' && store !== 'postgres') {
  console.error(`--store must be sqlite or postgres, got "${store}"`)
  process.exit(2)
}
if (benchUrl && store !== 'postgres') {
  console.error('BENCH_DATABASE_URL is set but --store is sqlite; unset one of them')
  process.exit(2)
}
if (flags.server !== 'dist' && flags.server !== 'tsx') {
  console.error(`--server must be dist or tsx, got "${flags.server}"`)
  process.exit(2)
}
const options = {
  store,
  rounds: positive('rounds', flags.rounds),
  duration: positive('duration', flags.duration),
  warmup: nonNegative('warmup', flags.warmup),
  connections: positive('connections', flags.connections),
  pipelining: positive('pipelining', flags.pipelining),
  server: flags.server as ServerMode,
  target: positive('target', flags.target ?? (store === 'postgres' ? '0.25' : '0.6'), false),
  sessionTarget: positive('session-target', flags['session-target'], false),
  breakdown: flags.breakdown,
  waitQuiet: nonNegative('wait-quiet', flags['wait-quiet']),
  noise: positive('noise', flags.noise, false),
  retryNoisy: nonNegative('retry-noisy', flags['retry-noisy']),
}

const log = (message: string) => process.stderr.write(`${message}\n`)

// ------------------------------------------------------------------ store and server
const cleanups = new Cleanups(log)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping`)
    void cleanups.run().finally(() => process.exit(130))
  })
}

/** One build under test: the current src/ (or --entry), or with --commit the earlier one too. */
interface Variant {
  name: 'before' | 'after' | 'current'
  /** A compiled main.js to run as it is; undefined: build src/ (or run it with tsx). */
  entry: string | undefined
  code: string
}

interface Setup {
  variant: Variant
  code: string
  server: RunningServer
  storeLabel: string
  apiKey: string
  session: string
}

async function setUp(variant: Variant): Promise<Setup> {
  const env: Record<string, string> = {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    JWT_SECRET: randomBytes(32).toString('base64url'),
    // Setup makes a login; keep the login limiter out of the way of repeated runs.
    LOGIN_ATTEMPTS_PER_MINUTE: '1000',
  }
  let storeLabel: string
  if (options.store === 'postgres') {
    const adminUrl = benchUrl ?? DEFAULT_ADMIN_URL
    let database: FreshDatabase
    try {
      database = await createFreshDatabase(adminUrl)
    } catch (err) {
      throw new Error(`cannot create a database on ${redact(adminUrl)}: ${(err as Error).message}`)
    }
    cleanups.push(() => database.drop())
    env.DATABASE_URL = database.url
    storeLabel = `PostgreSQL ${await serverVersion(adminUrl)} (fresh database ${database.name} on ${new URL(adminUrl).host})`
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'bench-auth-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    env.DATABASE_URL = `sqlite:${join(dir, 'bench.db')}`
    storeLabel = `SQLite (temporary file ${join(dir, 'bench.db')})`
  }

  const nodeArgs: string[] = []
  if (flags['cpu-prof']) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${flags['cpu-prof']}`)
  const how = variant.entry ? `node ${variant.entry}` : options.server === 'dist' ? 'compiling src/ to .bench/dist, then node .bench/dist/main.js' : 'node --import tsx src/main.ts'
  log(`starting the ${variant.name} server (${how}) on ${storeLabel}`)
  const server = await startServer({ mode: variant.entry ? 'dist' : options.server, env, nodeArgs, ...(variant.entry ? { entry: variant.entry } : {}) })
  cleanups.push(() => server.stop())
  log(`${variant.name} server ready at ${server.url} (pid ${server.pid})`)

  // Everything through the public API, as a client would.
  const email = `bench-${Date.now()}@example.com`
  const password = randomBytes(18).toString('base64url')
  await call(server.url, 'POST', '/v1/auth/signup', { body: { email, password, accountName: 'bench' } }, 201)
  const login = await call(server.url, 'POST', '/v1/auth/login', { body: { email, password } }, 200)
  const session = (login as { token: string }).token
  const apiKey = await call(server.url, 'POST', '/v1/keys', { token: session, body: { name: 'bench:auth', permission: 'Full' } }, 201)
  if (typeof apiKey !== 'string' || !apiKey.startsWith('mk_')) throw new Error(`POST /v1/keys answered ${JSON.stringify(apiKey)}, not a raw key`)
  const account = await call(server.url, 'GET', '/v1/account', { token: apiKey }, 200)
  log(`API key ${apiKey.slice(0, 12)}… works: GET /v1/account -> 200 ${JSON.stringify(account)}`)
  await call(server.url, 'GET', '/healthz', {}, 200)
  return { variant, code: variant.code, server, storeLabel, apiKey, session }
}

async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown }, expected: number): Promise<unknown> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  })
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}, expected ${expected}: ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

/** Which code was measured: the commit, and whether src/ had uncommitted changes. */
function describeCode(): string {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: PROJECT_DIR, encoding: 'utf8' })
  const head = git('rev-parse', '--short', 'HEAD')
  if (head.status !== 0) return 'not a git checkout'
  const dirty = git('status', '--porcelain', '--', 'src').stdout.trim()
  return `commit ${head.stdout.trim()}${dirty ? ` + uncommitted changes in src/ (${dirty.split('\n').length} paths)` : ', src/ clean'}`
}

function redact(url: string): string {
  const parsed = new URL(url)
  if (parsed.password) parsed.password = '***'
  return parsed.toString()
}

// ------------------------------------------------------------------ the runs
type Kind = 'trivial' | 'authed' | 'readyz' | 'session'
const KIND_LABEL: Record<Kind, string> = {
  trivial: 'GET /healthz (public, no store)',
  authed: 'GET /v1/account, API key',
  readyz: 'GET /readyz (public, one select 1)',
  session: 'GET /v1/account, session JWT',
}

interface Round {
  round: number
  attempt: number
  order: Kind[]
  runs: Partial<Record<Kind, Measurement>>
  quietBefore: { quiet: boolean; busyPct: number; waitedS: number }
  noisy: boolean
}

/** A round over every variant: the figures of each, as report() reads them for one. */
interface SharedRound extends Omit<Round, 'runs'> {
  variantOrder: Variant['name'][]
  runs: Partial<Record<Variant['name'], Partial<Record<Kind, Measurement>>>>
}

const roundOf = (shared: SharedRound, variant: Variant['name']): Round => ({ ...shared, runs: shared.runs[variant]! })

async function run(setups: Setup[]): Promise<{ kept: SharedRound[]; noisy: SharedRound[] }> {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const targetOf = (setup: Setup, kind: Kind): { url: string; headers: Record<string, string> } => {
    switch (kind) {
      case 'trivial':
        return { url: `${setup.server.url}/healthz`, headers: {} }
      case 'authed':
        return { url: `${setup.server.url}/v1/account`, headers: bearer(setup.apiKey) }
      case 'readyz':
        return { url: `${setup.server.url}/readyz`, headers: {} }
      case 'session':
        return { url: `${setup.server.url}/v1/account`, headers: bearer(setup.session) }
    }
  }
  const load = (setup: Setup, kind: Kind, seconds: number) =>
    measure({
      ...targetOf(setup, kind),
      connections: options.connections,
      pipelining: options.pipelining,
      durationSeconds: seconds,
      serverPid: setup.server.pid,
      ...(options.store === 'postgres' ? { storeProcess: 'postgres' } : {}),
    })
  const check = (setup: Setup, kind: Kind, m: Measurement, what: string) => {
    const problems = problemsOf(m)
    const ended = setup.server.exitStatus()
    if (ended) throw new Error(`${what}: the ${setup.variant.name} server ended during the run (${ended}); ${problems.join(', ')}`)
    if (problems.length > 0) throw new Error(`${what}: ${setup.variant.name} ${KIND_LABEL[kind]} had ${problems.join(', ')}; the run does not count`)
  }

  const kinds: Kind[] = options.breakdown ? ['trivial', 'authed', 'readyz', 'session'] : ['trivial', 'authed']
  if (options.warmup > 0) {
    log(`warm-up: ${options.warmup} s of each (not counted)`)
    for (const setup of setups) for (const kind of kinds) check(setup, kind, await load(setup, kind, options.warmup), 'warm-up')
  }

  const kept: SharedRound[] = []
  const noisy: SharedRound[] = []
  for (let i = 1; i <= options.rounds; i++) {
    // Alternate which goes first, so a drift in the machine does not favour one side.
    const order = i % 2 === 1 ? kinds : [...kinds].reverse()
    const variantOrder = (i % 4 === 1 || i % 4 === 0 ? setups : [...setups].reverse()).map((setup) => setup.variant.name)
    for (let attempt = 1; ; attempt++) {
      const quietBefore = await waitQuiet(options.waitQuiet, options.noise)
      if (!quietBefore.quiet) log(`round ${i}: the machine stayed busy (${Math.round(quietBefore.busyPct)}% of a core) for ${options.waitQuiet} s; measuring anyway`)
      const round: SharedRound = { round: i, attempt, order, variantOrder, runs: {}, quietBefore, noisy: false }
      for (const name of variantOrder) {
        const setup = setups.find((candidate) => candidate.variant.name === name)!
        const runs: Partial<Record<Kind, Measurement>> = {}
        round.runs[name] = runs
        for (const kind of order) {
          const m = await load(setup, kind, options.duration)
          check(setup, kind, m, `round ${i}`)
          runs[kind] = m
          if ((m.otherCpu ?? 0) > options.noise) round.noisy = true
          log(
            `round ${i}/${options.rounds}${attempt > 1 ? ` (attempt ${attempt})` : ''}${setups.length > 1 ? ` ${name.padEnd(6)}` : ''} ${kind.padEnd(7)} ${fmt.rps(m.requestsPerSecond).padStart(7)} req/s  p99 ${fmt.ms(m.latencyMs.p99)}` +
              `  CPU (% of a core): server ${fmt.pct(m.serverCpu)}${m.storeCpu !== undefined ? `, postgres ${fmt.pct(m.storeCpu)}` : ''}, autocannon ${fmt.pct(m.loadGeneratorCpu)}, other ${fmt.pct(m.otherCpu)}`,
          )
        }
      }
      if (round.noisy && attempt <= options.retryNoisy) {
        log(`round ${i}: other work took more than ${options.noise}% of a core during a run; set aside, measuring the round again`)
        noisy.push(round)
        continue
      }
      if (round.noisy) log(`round ${i}: still noisy after ${options.retryNoisy} retries; kept, flagged *`)
      kept.push(round)
      break
    }
  }
  return { kept, noisy }
}

// ------------------------------------------------------------------ report
function report(setup: Setup, kept: Round[], noisy: Round[]): { ratio: number; pass: boolean; summary: object; medians: Record<string, { requestsPerSecond: number; p99: number; serverMicrosPerRequest: number; storeMicrosPerRequest: number }> } {
  const kinds = Object.keys(kept[0]!.runs) as Kind[]
  const get = (r: Round, k: Kind) => r.runs[k]!
  const rows = kept.map((r) => [
    `${r.round}${r.noisy ? '*' : ''}`,
    r.order[0]!,
    fmt.rps(get(r, 'trivial').requestsPerSecond),
    fmt.ms(get(r, 'trivial').latencyMs.p99),
    fmt.rps(get(r, 'authed').requestsPerSecond),
    fmt.ms(get(r, 'authed').latencyMs.p99),
    fmt.ratio(get(r, 'authed').requestsPerSecond / get(r, 'trivial').requestsPerSecond),
    fmt.pct(get(r, 'trivial').serverCpu),
    fmt.pct(get(r, 'authed').serverCpu),
    ...(options.store === 'postgres' ? [fmt.pct(get(r, 'authed').storeCpu)] : []),
    fmt.pct(Math.max(get(r, 'trivial').otherCpu ?? 0, get(r, 'authed').otherCpu ?? 0)),
  ])
  const medOf = (k: Kind, f: (m: Measurement) => number | undefined) => median(kept.map((r) => f(get(r, k)) ?? Number.NaN))
  const med = Object.fromEntries(
    kinds.map((k) => [
      k,
      {
        requestsPerSecond: medOf(k, (m) => m.requestsPerSecond),
        p50: medOf(k, (m) => m.latencyMs.p50),
        p99: medOf(k, (m) => m.latencyMs.p99),
        serverCpu: medOf(k, (m) => m.serverCpu),
        storeCpu: medOf(k, (m) => m.storeCpu),
        loadGeneratorCpu: medOf(k, (m) => m.loadGeneratorCpu),
        otherCpu: medOf(k, (m) => m.otherCpu),
        serverMicrosPerRequest: medOf(k, (m) => m.serverMicrosPerRequest),
        storeMicrosPerRequest: medOf(k, (m) => m.storeMicrosPerRequest),
      },
    ]),
  ) as Record<Kind, {
    requestsPerSecond: number
    p50: number
    p99: number
    serverCpu: number
    storeCpu: number
    loadGeneratorCpu: number
    otherCpu: number
    serverMicrosPerRequest: number
    storeMicrosPerRequest: number
  }>
  const ratio = med.authed.requestsPerSecond / med.trivial.requestsPerSecond
  const pass = ratio >= options.target
  const ratios = kept.map((r) => get(r, 'authed').requestsPerSecond / get(r, 'trivial').requestsPerSecond)
  rows.push([
    'median',
    '',
    fmt.rps(med.trivial.requestsPerSecond),
    fmt.ms(med.trivial.p99),
    fmt.rps(med.authed.requestsPerSecond),
    fmt.ms(med.authed.p99),
    fmt.ratio(ratio),
    fmt.pct(med.trivial.serverCpu),
    fmt.pct(med.authed.serverCpu),
    ...(options.store === 'postgres' ? [fmt.pct(med.authed.storeCpu)] : []),
    '',
  ])

  const out: string[] = []
  out.push('')
  out.push(`bench:auth — GET /v1/account with an API key vs GET /healthz, same server${setup.variant.name === 'current' ? '' : ` — ${setup.variant.name.toUpperCase()}`}`)
  out.push(`store: ${setup.storeLabel}`)
  out.push(`code: ${setup.code}`)
  out.push(
    `node ${process.version}, ${cpus().length} cores; server: ${setup.variant.entry ? `node ${setup.variant.entry}` : options.server === 'dist' ? 'compiled (.bench/dist/main.js)' : 'tsx'} child process; ` +
      `autocannon: ${options.connections} connections, pipelining ${options.pipelining}, ${options.duration} s per run, ` +
      `${options.rounds} rounds, ${options.warmup} s warm-up each`,
  )
  out.push('')
  out.push(
    table(
      [
        'round',
        'first',
        'trivial req/s',
        'trivial p99',
        'authed req/s',
        'authed p99',
        'ratio',
        'srv CPU triv',
        'srv CPU auth',
        ...(options.store === 'postgres' ? ['pg CPU auth'] : []),
        'other CPU',
      ],
      rows,
    ),
  )
  out.push('(CPU columns: percent of one core over the run; "other" is what neither the server, the store nor autocannon used)')
  if (kept.some((r) => r.noisy)) out.push('* other work on the machine took more than the noise limit during this round even after retries')
  if (noisy.length > 0) {
    out.push(
      `${noisy.length} noisy round(s) set aside and measured again: ` +
        noisy
          .map((r) => `round ${r.round}: trivial ${fmt.rps(get(r, 'trivial').requestsPerSecond)}, authed ${fmt.rps(get(r, 'authed').requestsPerSecond)}, other ${fmt.pct(Math.max(...kinds.map((k) => get(r, k).otherCpu ?? 0)))}`)
          .join('; '),
    )
  }
  out.push('')
  for (const k of kinds) {
    const m = med[k]
    out.push(
      `median ${KIND_LABEL[k].padEnd(36)} ${fmt.rps(m.requestsPerSecond).padStart(7)} req/s  p50 ${fmt.ms(m.p50).padStart(8)}  p99 ${fmt.ms(m.p99).padStart(8)}` +
        `  ratio to trivial ${fmt.ratio(m.requestsPerSecond / med.trivial.requestsPerSecond)}` +
        `  server CPU ${Math.round(m.serverMicrosPerRequest)} µs/request` +
        (options.store === 'postgres' ? ` + PostgreSQL ${Math.round(m.storeMicrosPerRequest)} µs/request` : ''),
    )
  }
  out.push(
    `server CPU per request, authed ÷ trivial: ${(med.authed.serverMicrosPerRequest / med.trivial.serverMicrosPerRequest).toFixed(2)}x` +
      ' (CPU time per request moves less with other load on the machine than req/s does)',
  )
  out.push(`p99 side by side: trivial ${fmt.ms(med.trivial.p99)} | authed ${fmt.ms(med.authed.p99)} (x${(med.authed.p99 / med.trivial.p99).toFixed(2)})`)
  out.push(`all ${kept.length * kinds.length + noisy.length * kinds.length} measured runs: every response 2xx, no socket errors, no timeouts`)
  out.push('')
  out.push(
    `ratio of medians (authed req/s ÷ trivial req/s): ${fmt.ratio(ratio)}  target >= ${options.target}: ${pass ? 'PASS' : 'BELOW TARGET'}` +
      `  (per-round ratios ${ratios.map(fmt.ratio).join(', ')})`,
  )
  let sessionPass: boolean | undefined
  if (kinds.includes('session')) {
    const keyToSession = med.authed.requestsPerSecond / med.session.requestsPerSecond
    sessionPass = keyToSession >= options.sessionTarget
    out.push(
      `API key ÷ session JWT on GET /v1/account (ratio of medians): ${fmt.ratio(keyToSession)}  target >= ${options.sessionTarget}: ${sessionPass ? 'PASS' : 'BELOW TARGET'}` +
        `  (per-round ${kept.map((r) => fmt.ratio(get(r, 'authed').requestsPerSecond / get(r, 'session').requestsPerSecond)).join(', ')})`,
    )
  }
  console.log(out.join('\n'))

  const summary = {
    bench: 'auth',
    store: options.store,
    storeLabel: setup.storeLabel,
    code: setup.code,
    node: process.version,
    cores: cpus().length,
    options,
    medians: med,
    ratio,
    target: options.target,
    pass,
    ...(sessionPass !== undefined ? { sessionTarget: options.sessionTarget, sessionPass } : {}),
    rounds: kept,
    noisyRounds: noisy,
  }
  return { ratio, pass: pass && sessionPass !== false, summary, medians: med }
}

/** Before and after side by side: medians of the same rounds. */
function compare(setups: Setup[], medians: Record<string, { requestsPerSecond: number; p99: number; serverMicrosPerRequest: number; storeMicrosPerRequest: number }>[]): string {
  const kinds = Object.keys(medians[0]!) as Kind[]
  const rows = setups.map((setup, i) => {
    const med = medians[i]!
    return [
      setup.variant.name,
      ...kinds.map((k) => `${fmt.rps(med[k]!.requestsPerSecond)} (${Math.round(med[k]!.serverMicrosPerRequest)} µs${options.store === 'postgres' ? ` + ${Math.round(med[k]!.storeMicrosPerRequest)}` : ''})`),
      fmt.ratio(med.authed!.requestsPerSecond / med.trivial!.requestsPerSecond),
      ...(kinds.includes('session') ? [fmt.ratio(med.authed!.requestsPerSecond / med.session!.requestsPerSecond)] : []),
    ]
  })
  return [
    '',
    `before and after, medians of the same ${options.rounds} rounds (req/s, server CPU per request${options.store === 'postgres' ? ' + PostgreSQL CPU per request' : ''}):`,
    table(['', ...kinds.map((k) => k), 'authed ÷ trivial', ...(kinds.includes('session') ? ['key ÷ session'] : [])], rows),
  ].join('\n')
}

// ------------------------------------------------------------------ main
let exitCode = 0
try {
  const variants: Variant[] = []
  if (flags.commit) {
    log(`building ${flags.commit} (git archive into .bench/, then tsc)`)
    const before = buildCommit(flags.commit)
    variants.push({ name: 'before', entry: before.entry, code: `commit ${before.sha} (--commit ${flags.commit})` })
  }
  variants.push({
    name: flags.commit ? 'after' : 'current',
    entry: flags.entry,
    code: flags.entry ? `${flags.entry} as given (not built from src/)` : describeCode(),
  })
  const setups: Setup[] = []
  for (const variant of variants) setups.push(await setUp(variant))
  const rounds = await run(setups)
  const results = setups.map((setup) =>
    report(setup, rounds.kept.map((r) => roundOf(r, setup.variant.name)), rounds.noisy.map((r) => roundOf(r, setup.variant.name))),
  )
  if (results.length > 1) console.log(compare(setups, results.map((r) => r.medians)))
  if (flags.json) {
    const summary = results.length === 1 ? results[0]!.summary : { variants: results.map((r) => r.summary) }
    writeFileSync(flags.json, `${JSON.stringify(summary, null, 2)}\n`)
    log(`results written to ${flags.json}`)
  }
  if (!results[results.length - 1]!.pass && flags.strict) exitCode = 3
} catch (err) {
  console.error(`\nbench:auth FAILED: ${(err as Error).message}`)
  exitCode = 1
} finally {
  await cleanups.run()
}
process.exit(exitCode)
