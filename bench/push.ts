/**
 * bench:push — realtime push (SSE) side by side with Nginx + Nchan, one harness for both.
 *
 * Runs the shared load harness (../shared/bench/push, outside this repository: its
 * compare.sh and harness.mjs) against the Nchan peer and against this platform, in one
 * run, alternating which goes first, several runs each, and prints the medians per
 * target and the ratios platform/nchan against the issue's targets:
 *
 *   fanout  1 channel x 1,000 subscribers, 100 publishes/s for 20 s
 *   spread  1,000 channels x 10 subscribers (10,000 streams), 100 publishes/s for 20 s
 *   idle    10,000 idle streams on 1,000 channels: server memory per connection
 *   replay  Last-Event-ID replay of 100 missed events (a check, not a benchmark)
 *
 * Targets (issue 8): latency p99 within 2x of Nchan's and under 100 ms (fanout, spread);
 * at most 14 KB (14,000 bytes) of server memory per idle connection (idle).
 *
 *   npm run bench:push                                   # fanout, spread, idle; SQLite; 3 runs each
 *   npm run bench:push -- --scenarios idle --runs 5
 *   npm run bench:push -- --store postgres               # a fresh database on 127.0.0.1:5432, dropped after
 *   npm run bench:push -- --scenarios fanout -- --duration 60   # flags after a second -- go to the harness
 *
 * Flags: --scenarios fanout,spread,idle[,replay]  --runs 3  --store sqlite|postgres
 *        --wait-quiet 60 --retry-noisy 2 (compare.sh: wait for an idle machine; run a noisy run again)
 *        --out DIR (every run's JSON and log; default a new temporary folder)  --json FILE (the summary)
 *        --entry FILE (run this compiled main.js as it is instead of building src/)
 *        --node-arg ARG (repeatable, for the server; e.g. --node-arg=--cpu-prof --node-arg=--cpu-prof-dir=DIR)
 *        --server-env NAME=VALUE (repeatable: a setting for the measured server, e.g. PUSH_COALESCE_WRITES=true;
 *        the shell's own environment does not reach it)
 *        --strict (exit 3 when a target is missed)
 *        --allow-type-errors (run what tsc emitted even if it reported type errors, e.g. while
 *        another change elsewhere in src/ is half done; the report says so)
 * Env: PUSH_BENCH_DIR (the harness folder, default ../shared/bench/push from the project),
 *      BENCH_DATABASE_URL (PostgreSQL admin URL for --store postgres).
 *
 * Needs: nginx and its Nchan module (apt-get install nginx libnginx-mod-nchan; the packaged
 * service is not used, the harness's run-nchan.sh starts its own), curl, ss.
 *
 * How: src/ is compiled to .bench/push/dist (apart from the other benchmarks' builds);
 * a first server on a temporary SQLite file (or a fresh PostgreSQL database) takes the
 * sign-up, login and a Full API key through the public API, then stops. compare.sh then
 * starts the platform itself before every run and stops it after (--platform-cmd), on
 * the same store and port, so both servers start fresh for every run, as the memory
 * figure requires; it raises the open-files limit for itself, the harness and both
 * servers (to 65,536, or the hard limit when that is lower).
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { createFreshDatabase, serverVersion, type FreshDatabase } from './lib/postgres.js'
import { freePort, PROJECT_DIR, startServer, Cleanups } from './lib/server.js'

const SCENARIOS = ['fanout', 'spread', 'idle', 'replay'] as const
type Scenario = (typeof SCENARIOS)[number]
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
/** The issue's targets. */
const TARGET = { p99Ratio: 2, p99Ms: 100, bytesPerConnection: 14_000 }

const { values: flags, positionals } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'fanout,spread,idle' },
    runs: { type: 'string', default: '3' },
    store: { type: 'string' },
    'wait-quiet': { type: 'string', default: '60' },
    'retry-noisy': { type: 'string', default: '2' },
    out: { type: 'string' },
    json: { type: 'string' },
    entry: { type: 'string' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    'server-env': { type: 'string', multiple: true, default: [] },
    strict: { type: 'boolean', default: false },
    'allow-type-errors': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  allowPositionals: true,
  strict: true,
})

if (flags.help) {
  console.log(`usage: npm run bench:push -- [--scenarios fanout,spread,idle,replay] [--runs 3] [--store sqlite|postgres]
       [--wait-quiet 60] [--retry-noisy 2] [--out DIR] [--json FILE] [--entry FILE] [--node-arg ARG]... [--server-env NAME=VALUE]...
       [--strict] [--allow-type-errors]
       [-- harness flags, e.g. --duration 60]
env: PUSH_BENCH_DIR (default ../shared/bench/push), BENCH_DATABASE_URL (for --store postgres)`)
  process.exit(0)
}

const log = (message: string) => process.stderr.write(`${message}\n`)
function fail(message: string, code = 2): never {
  log(`bench:push: ${message}`)
  process.exit(code)
}

function count(name: string, raw: string | undefined, min: number): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min) fail(`--${name} must be an integer of at least ${min}, got "${raw}"`)
  return value
}

const scenarios = flags.scenarios.split(',').map((s) => s.trim()).filter(Boolean) as Scenario[]
for (const s of scenarios) if (!SCENARIOS.includes(s)) fail(`unknown scenario "${s}" (${SCENARIOS.join(', ')})`)
if (scenarios.length === 0) fail('--scenarios is empty')
const runs = count('runs', flags.runs, 1)
const waitQuietS = count('wait-quiet', flags['wait-quiet'], 0)
const retryNoisy = count('retry-noisy', flags['retry-noisy'], 0)
const benchUrl = process.env.BENCH_DATABASE_URL?.trim() || undefined
const store = flags.store ?? (benchUrl ? 'postgres' : 'sqlite')
if (store !== 'sqlite' && store !== 'postgres') fail(`--store must be sqlite or postgres, got "${store}"`)

// ------------------------------------------------------------------ the harness, outside the repository
const harnessDir = resolve(process.env.PUSH_BENCH_DIR?.trim() || resolve(PROJECT_DIR, '..', 'shared', 'bench', 'push'))
for (const file of ['compare.sh', 'harness.mjs', 'run-nchan.sh', 'summarize.mjs']) {
  if (!existsSync(join(harnessDir, file))) {
    fail(
      `the push load harness is missing: ${join(harnessDir, file)} not found.\n` +
        '  bench:push runs the shared harness from ../shared/bench/push beside the project checkout\n' +
        '  (or from PUSH_BENCH_DIR); it is not part of this repository.',
    )
  }
}
const nchanModule = process.env.NCHAN_MODULE ?? '/usr/lib/nginx/modules/ngx_nchan_module.so'
if (spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status !== 0 || !existsSync(nchanModule)) {
  fail(`the Nchan peer is not installed (nginx, ${nchanModule}); install it with:\n  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends nginx libnginx-mod-nchan`)
}
for (const tool of ['curl', 'ss']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0) fail(`${tool} not found (compare.sh needs it)`)
}

// ------------------------------------------------------------------ cleanup
const cleanups = new Cleanups(log)
let compareChild: { pid: number; exited: Promise<unknown> } | undefined
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping`)
    // compare.sh runs in a process group of its own with the harness: both get the signal,
    // and compare.sh stops the servers it started (Nchan, the platform) before it exits.
    // The store is removed only after that.
    const child = compareChild
    if (child !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM')
      } catch {
        // already gone
      }
    }
    const waited = child === undefined ? Promise.resolve() : Promise.race([child.exited, new Promise((r) => setTimeout(r, 60_000))])
    void waited.then(() => cleanups.run()).finally(() => process.exit(130))
  })
}

// ------------------------------------------------------------------ build
function git(...args: string[]): string | undefined {
  const result = spawnSync('git', ['--no-optional-locks', ...args], { cwd: PROJECT_DIR, encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : undefined
}

/** Compiles src/ to .bench/push/dist, apart from the other benchmarks' .bench/dist. */
function build(): { entry: string; code: string } {
  if (flags.entry) {
    const entry = resolve(flags.entry)
    if (!existsSync(entry)) fail(`--entry ${entry} does not exist`)
    return { entry, code: `${entry} as given (--entry)` }
  }
  const outDir = resolve(PROJECT_DIR, '.bench', 'push', 'dist')
  const tsc = resolve(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  log(`compiling src/ to ${outDir}`)
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: PROJECT_DIR, stdio: ['ignore', 'inherit', 'inherit'] })
  const typeErrors = result.status !== 0
  if (typeErrors && !(flags['allow-type-errors'] && existsSync(join(outDir, 'main.js')))) {
    fail(`build failed (tsc exit ${result.status ?? result.signal}); --allow-type-errors runs what tsc emitted anyway`, 1)
  }
  if (typeErrors) log('bench:push: tsc reported type errors (above); running what it emitted (--allow-type-errors)')
  const head = git('rev-parse', '--short', 'HEAD')
  const dirty = git('status', '--porcelain', '--', 'src')
  const code = head === undefined ? 'not a git checkout' : `commit ${head}${dirty ? ` + uncommitted changes in src/ (${dirty.split('\n').length} paths)` : ', src/ clean'}`
  return { entry: join(outDir, 'main.js'), code: typeErrors ? `${code}, built WITH TYPE ERRORS (--allow-type-errors)` : code }
}

// ------------------------------------------------------------------ setup through the public API
async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown }, expected: number): Promise<unknown> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${base}${path}`, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}, expected ${expected}: ${text.slice(0, 300)}`)
  return text === '' ? undefined : JSON.parse(text)
}

interface Setup {
  env: Record<string, string>
  apiKey: string
  storeLabel: string
}

async function setUp(entry: string, workDir: string): Promise<Setup> {
  const env: Record<string, string> = {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    JWT_SECRET: randomBytes(32).toString('base64url'),
    LOGIN_ATTEMPTS_PER_MINUTE: '1000',
  }
  let storeLabel: string
  if (store === 'postgres') {
    const adminUrl = benchUrl ?? DEFAULT_ADMIN_URL
    let database: FreshDatabase
    try {
      database = await createFreshDatabase(adminUrl, 'bench_push')
    } catch (err) {
      throw new Error(`cannot create a database on ${new URL(adminUrl).host}: ${(err as Error).message}`)
    }
    cleanups.push(() => database.drop())
    env.DATABASE_URL = database.url
    storeLabel = `PostgreSQL ${await serverVersion(adminUrl)} (fresh database ${database.name} on ${new URL(adminUrl).host})`
  } else {
    env.DATABASE_URL = `sqlite:${join(workDir, 'bench.db')}`
    storeLabel = `SQLite (temporary file ${join(workDir, 'bench.db')})`
  }

  log(`setup: starting node ${entry} on ${storeLabel}`)
  const server = await startServer({ mode: 'dist', entry, env })
  try {
    const email = `bench-push-${Date.now()}@example.com`
    const password = randomBytes(18).toString('base64url')
    await call(server.url, 'POST', '/v1/auth/signup', { body: { email, password, accountName: 'bench push' } }, 201)
    const login = (await call(server.url, 'POST', '/v1/auth/login', { body: { email, password } }, 200)) as { token: string }
    const apiKey = await call(server.url, 'POST', '/v1/keys', { token: login.token, body: { name: 'bench:push', permission: 'Full' } }, 201)
    if (typeof apiKey !== 'string' || !apiKey.startsWith('mk_')) throw new Error(`POST /v1/keys answered ${JSON.stringify(apiKey)}, not a raw key`)
    // The push API answers as the harness expects before any run starts.
    const token = (await call(server.url, 'POST', '/v1/push/tokens', { token: apiKey, body: { channels: ['bench-check'] } }, 200)) as { token?: unknown }
    if (typeof token.token !== 'string') throw new Error(`POST /v1/push/tokens answered ${JSON.stringify(token)}`)
    const published = (await call(server.url, 'POST', '/v1/push/publish', { token: apiKey, body: { channel: 'bench-check', event: 'bench', data: { ok: true } } }, 200)) as { delivered?: unknown }
    if (published.delivered !== 0) throw new Error(`POST /v1/push/publish answered ${JSON.stringify(published)}`)
    log(`setup: signed up, Full API key ${apiKey.slice(0, 12)}…, push tokens and publish answer 200`)
    return { env, apiKey, storeLabel }
  } finally {
    await server.stop()
  }
}

// ------------------------------------------------------------------ the runs
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

function runCompare(scenario: Scenario, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((done, failed) => {
    const child = spawn('bash', [join(harnessDir, 'compare.sh'), scenario, ...args], { cwd: harnessDir, env, detached: true, stdio: ['ignore', 'inherit', 'inherit'] })
    child.once('error', failed)
    const exited = new Promise<number>((resolveExit) =>
      child.once('exit', (code, signal) => {
        compareChild = undefined
        resolveExit(code ?? (signal ? 128 : 1))
      }),
    )
    if (child.pid !== undefined) compareChild = { pid: child.pid, exited }
    void exited.then(done)
  })
}

type HarnessResult = {
  ok?: boolean
  serverState?: string
  notes?: string[]
  connections?: { established?: number; requested?: number }
  events?: { expected?: number; lost?: number; duplicates?: number }
  latencyMs?: { p50?: number; p99?: number }
  serverMemory?: { bytesPerConnection?: number }
  serverCpu?: { cpuPctOfCore?: number }
  harness?: { cpuPctOfCoreWhilePublishing?: number }
  machineCpu?: { elsePctOfCore?: number }
  replay?: { replayed?: number; missed?: number; missing?: number; duplicates?: number; inOrder?: boolean; recoveredFlag?: unknown }
}

function readResult(file: string): HarnessResult | undefined {
  try {
    const line = readFileSync(file, 'utf8').trim().split('\n').reverse().find((l) => l.startsWith('{'))
    return line ? (JSON.parse(line) as HarnessResult) : undefined
  } catch {
    return undefined
  }
}

interface Summary {
  targets: Record<string, { runs: number; ok: number; medians: Record<string, number | null> }>
  ratios?: { p50: number | null; p99: number | null; bytesPerConnection: number | null }
}

interface ScenarioOutcome {
  scenario: Scenario
  exitCode: number
  dir: string
  summary: Summary | undefined
  runs: { target: string; n: number; noisy: boolean; result: HarnessResult }[]
}

function collect(scenario: Scenario, dir: string, exitCode: number): ScenarioOutcome {
  const runsFound: ScenarioOutcome['runs'] = []
  for (const file of readdirSync(dir).sort()) {
    const match = /^(nchan|platform)-(\d+)(\.noisy-\d+)?\.json$/.exec(file)
    if (!match) continue
    const result = readResult(join(dir, file))
    if (result) runsFound.push({ target: match[1]!, n: Number(match[2]), noisy: match[3] !== undefined, result })
  }
  let summary: Summary | undefined
  try {
    summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as Summary
  } catch {
    summary = undefined
  }
  return { scenario, exitCode, dir, summary, runs: runsFound }
}

const num = (v: number | null | undefined, digits = 2) => (typeof v === 'number' && Number.isFinite(v) ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-')

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

interface Verdict {
  scenario: Scenario
  metric: string
  nchan: number | null
  platform: number | null
  ratio: number | null
  target: string
  met: boolean | undefined
}

function verdicts(outcome: ScenarioOutcome): Verdict[] {
  const m = (target: string, label: string) => outcome.summary?.targets[target]?.medians[label] ?? null
  const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b !== 0 ? a / b : null)
  const out: Verdict[] = []
  if (outcome.scenario === 'fanout' || outcome.scenario === 'spread') {
    const p50 = [m('nchan', 'latency p50 (ms)'), m('platform', 'latency p50 (ms)')] as const
    const p99 = [m('nchan', 'latency p99 (ms)'), m('platform', 'latency p99 (ms)')] as const
    const r50 = ratio(p50[1], p50[0])
    const r99 = ratio(p99[1], p99[0])
    out.push({ scenario: outcome.scenario, metric: 'latency p50 (ms)', nchan: p50[0], platform: p50[1], ratio: r50, target: '-', met: undefined })
    out.push({
      scenario: outcome.scenario,
      metric: 'latency p99 (ms)',
      nchan: p99[0],
      platform: p99[1],
      ratio: r99,
      target: `<= ${TARGET.p99Ratio}x nchan and < ${TARGET.p99Ms} ms`,
      met: r99 === null || p99[1] === null ? undefined : r99 <= TARGET.p99Ratio && p99[1] < TARGET.p99Ms,
    })
    const lost = [m('nchan', 'events lost (%)'), m('platform', 'events lost (%)')] as const
    out.push({ scenario: outcome.scenario, metric: 'events lost (%)', nchan: lost[0], platform: lost[1], ratio: null, target: '0', met: lost[1] === null ? undefined : lost[1] === 0 })
  } else if (outcome.scenario === 'idle') {
    const bytes = [m('nchan', 'bytes per idle conn'), m('platform', 'bytes per idle conn')] as const
    out.push({
      scenario: 'idle',
      metric: 'bytes per idle conn',
      nchan: bytes[0],
      platform: bytes[1],
      ratio: ratio(bytes[1], bytes[0]),
      target: `<= ${TARGET.bytesPerConnection.toLocaleString('en-US')}`,
      met: bytes[1] === null ? undefined : bytes[1] <= TARGET.bytesPerConnection,
    })
  } else {
    const missing = m('platform', 'replay missing')
    const dups = m('platform', 'replay duplicates')
    out.push({ scenario: 'replay', metric: 'replay missing + duplicates', nchan: sum(m('nchan', 'replay missing'), m('nchan', 'replay duplicates')), platform: sum(missing, dups), ratio: null, target: '0', met: missing === null || dups === null ? undefined : missing + dups === 0 })
  }
  return out
}

function sum(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b
}

/** --server-env NAME=VALUE settings for the measured server (the setup server keeps its own). */
function extraServerEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const pair of flags['server-env'] ?? []) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/s.exec(pair)
    if (!match) fail(`--server-env must be NAME=VALUE, got "${pair}"`)
    env[match[1]!] = match[2]!
  }
  return env
}

// ------------------------------------------------------------------ main
async function main(): Promise<number> {
  const started = new Date()
  const built = build()
  const workDir = mkdtempSync(join(tmpdir(), 'bench-push-'))
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }))
  const setup = await setUp(built.entry, workDir)

  // compare.sh starts the platform before each run and stops it after: same store, same
  // port, same secret. The env file keeps the secret and key off the command line.
  const port = await freePort()
  const envFile = join(workDir, 'server.env')
  const serverEnv = { ...setup.env, ...extraServerEnv(), HOST: '127.0.0.1', PORT: String(port) }
  writeFileSync(envFile, Object.entries(serverEnv).map(([k, v]) => `${k}=${shellQuote(v)}`).join('\n') + '\n', { mode: 0o600 })
  const nodeArgs = (flags['node-arg'] ?? []).map(shellQuote).join(' ')
  const platformCmd = `cd ${shellQuote(PROJECT_DIR)} && unset PUSH_API_KEY && set -a && . ${shellQuote(envFile)} && set +a && exec ${shellQuote(process.execPath)} ${nodeArgs} ${shellQuote(built.entry)}`
  const platformUrl = `http://127.0.0.1:${port}/v1`

  const outRoot = resolve(flags.out ?? mkdtempSync(join(tmpdir(), 'bench-push-out-')))
  mkdirSync(outRoot, { recursive: true })
  const compareEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    TMPDIR: tmpdir(),
    PUSH_API_KEY: setup.apiKey,
  }
  if (process.env.NCHAN_MODULE) compareEnv.NCHAN_MODULE = process.env.NCHAN_MODULE
  if (process.env.PUSH_HARNESS_DEBUG) compareEnv.PUSH_HARNESS_DEBUG = process.env.PUSH_HARNESS_DEBUG

  const hardLimit = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()
  log(`harness: ${harnessDir}; open-files hard limit ${hardLimit} (compare.sh raises the soft limit to 65,536 or to it)`)
  log(`platform: ${platformUrl}, restarted by compare.sh for every run; code: ${built.code}`)
  log(`runs: ${runs} per target and scenario, alternating order; results in ${outRoot}\n`)

  const outcomes: ScenarioOutcome[] = []
  for (const scenario of scenarios) {
    const dir = join(outRoot, scenario)
    mkdirSync(dir, { recursive: true })
    const args = [
      '--runs', String(runs),
      '--platform-url', platformUrl,
      '--platform-cmd', platformCmd,
      '--wait-quiet', String(waitQuietS),
      '--retry-noisy', String(retryNoisy),
      '--out', dir,
      ...(positionals.length > 0 ? ['--', ...positionals] : []),
    ]
    log(`=== ${scenario} ===`)
    const exitCode = await runCompare(scenario, args, compareEnv)
    if (exitCode !== 0) log(`compare.sh ${scenario} exited ${exitCode}; see ${dir}`)
    outcomes.push(collect(scenario, dir, exitCode))
    log('')
  }

  // ---------------------------------------------------------------- report
  const all = outcomes.flatMap(verdicts)
  const lines: string[] = []
  lines.push(`bench:push, ${started.toISOString()}: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 1024 ** 3)} GiB, Node ${process.version}`)
  lines.push(`platform: ${setup.storeLabel}; ${built.code}`)
  lines.push(`${runs} run(s) per target and scenario, medians; ratio = platform / nchan`)
  lines.push('')
  lines.push('each run (other = CPU neither harness nor server used, % of a core; runs over 25% were run again, the noisy ones listed apart):')
  const runRows: string[][] = []
  for (const o of outcomes) {
    for (const r of o.runs.sort((a, b) => a.n - b.n || a.target.localeCompare(b.target) || Number(a.noisy) - Number(b.noisy))) {
      const x = r.result
      runRows.push([
        `${o.scenario} ${r.n}${r.noisy ? ' (noisy, set aside)' : ''}`,
        r.target,
        `${x.connections?.established ?? '-'}`,
        x.events?.lost === undefined ? '-' : String(x.events.lost),
        num(x.latencyMs?.p50),
        num(x.latencyMs?.p99),
        num(x.serverMemory?.bytesPerConnection, 0),
        num(x.serverCpu?.cpuPctOfCore, 0),
        num(x.machineCpu?.elsePctOfCore, 0),
        x.ok ? 'ok' : 'NOT OK',
      ])
    }
  }
  lines.push(table(['run', 'target', 'open', 'lost', 'p50 ms', 'p99 ms', 'B/conn', 'server %', 'other %', ''], runRows))
  lines.push('')
  lines.push(
    table(
      ['scenario', 'metric (median)', 'nchan', 'platform', 'ratio', 'target', 'met'],
      all.map((v) => [
        v.scenario,
        v.metric,
        num(v.nchan, v.metric.startsWith('bytes') || v.scenario === 'replay' ? 0 : 2),
        num(v.platform, v.metric.startsWith('bytes') || v.scenario === 'replay' ? 0 : 2),
        v.ratio === null ? '' : num(v.ratio),
        v.target,
        v.met === undefined ? (v.target === '-' ? '' : 'no figure') : v.met ? 'yes' : 'NO',
      ]),
    ),
  )
  const missed = all.filter((v) => v.met === false)
  const unknown = all.filter((v) => v.met === undefined && v.target !== '-')
  lines.push('')
  lines.push(missed.length === 0 && unknown.length === 0 ? 'all targets met' : `targets missed: ${missed.map((v) => `${v.scenario} ${v.metric}`).join(', ') || 'none'}${unknown.length ? `; without a figure: ${unknown.map((v) => `${v.scenario} ${v.metric}`).join(', ')}` : ''}`)
  lines.push(`every run's JSON and log, and compare.sh's summary per scenario: ${outRoot}`)
  process.stdout.write(`\n${lines.join('\n')}\n`)

  if (flags.json) {
    writeFileSync(flags.json, JSON.stringify({ started: started.toISOString(), code: built.code, store: setup.storeLabel, runs, outRoot, verdicts: all, outcomes }, null, 2) + '\n')
    log(`summary JSON: ${flags.json}`)
  }
  if (outcomes.some((o) => o.summary === undefined)) return 1
  return flags.strict && (missed.length > 0 || unknown.length > 0) ? 3 : 0
}

main()
  .then(async (code) => {
    await cleanups.run()
    process.exit(code)
  })
  .catch(async (err: unknown) => {
    log(`bench:push failed: ${(err as Error).stack ?? String(err)}`)
    await cleanups.run()
    process.exit(1)
  })
