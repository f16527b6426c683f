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
 * Parts: setup.ts (the build and the setup server), results.ts (compare.sh's results against
 * the targets), log.ts.
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
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { flag, integerAtLeast, parseFlags } from '../lib/flags.js'
import { freePort, PROJECT_DIR, Cleanups } from '../lib/server.js'
import { fail, log } from './log.js'
import { collect, num, SCENARIOS, table, verdicts, type Scenario, type ScenarioOutcome } from './results.js'
import { build, setUp, type SetupOptions } from './setup.js'

// Flags after `--` (positionals) go to the harness.
const { flags, positionals } = parseFlags(
  {
    scenarios: flag.string('fanout,spread,idle'),
    // Checked below: integers.
    runs: flag.string('3'),
    store: flag.string(),
    'wait-quiet': flag.string('60'),
    'retry-noisy': flag.string('2'),
    out: flag.string(),
    json: flag.string(),
    entry: flag.string(),
    'node-arg': flag.list(),
    'server-env': flag.list(),
    strict: flag.boolean(),
    'allow-type-errors': flag.boolean(),
    help: flag.boolean(),
  },
  { positionals: true },
)

if (flags.help) {
  console.log(`usage: npm run bench:push -- [--scenarios fanout,spread,idle,replay] [--runs 3] [--store sqlite|postgres]
       [--wait-quiet 60] [--retry-noisy 2] [--out DIR] [--json FILE] [--entry FILE] [--node-arg ARG]... [--server-env NAME=VALUE]...
       [--strict] [--allow-type-errors]
       [-- harness flags, e.g. --duration 60]
env: PUSH_BENCH_DIR (default ../shared/bench/push), BENCH_DATABASE_URL (for --store postgres)`)
  process.exit(0)
}

const scenarios = flags.scenarios.split(',').map((s) => s.trim()).filter(Boolean) as Scenario[]
for (const s of scenarios) if (!SCENARIOS.includes(s)) fail(`unknown scenario "${s}" (${SCENARIOS.join(', ')})`)
if (scenarios.length === 0) fail('--scenarios is empty')
const runs = integerAtLeast('runs', flags.runs, 1, 'bench:push: ')
const waitQuietS = integerAtLeast('wait-quiet', flags['wait-quiet'], 0, 'bench:push: ')
const retryNoisy = integerAtLeast('retry-noisy', flags['retry-noisy'], 0, 'bench:push: ')
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
/** What setUp() takes: the store chosen above, and the cleanups that undo what it makes. */
const setupOptions: SetupOptions = { store, benchUrl, cleanups }

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

/** --server-env NAME=VALUE settings for the measured server (the setup server keeps its own). */
function extraServerEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const pair of flags['server-env']) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/s.exec(pair)
    if (!match) fail(`--server-env must be NAME=VALUE, got "${pair}"`)
    env[match[1]!] = match[2]!
  }
  return env
}

// ------------------------------------------------------------------ main
async function main(): Promise<number> {
  const started = new Date()
  const built = build({ entry: flags.entry, allowTypeErrors: flags['allow-type-errors'] })
  const workDir = mkdtempSync(join(tmpdir(), 'bench-push-'))
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }))
  const setup = await setUp(built.entry, workDir, setupOptions)

  // compare.sh starts the platform before each run and stops it after: same store, same
  // port, same secret. The env file keeps the secret and key off the command line.
  const port = await freePort()
  const envFile = join(workDir, 'server.env')
  const serverEnv = { ...setup.env, ...extraServerEnv(), HOST: '127.0.0.1', PORT: String(port) }
  writeFileSync(envFile, Object.entries(serverEnv).map(([k, v]) => `${k}=${shellQuote(v)}`).join('\n') + '\n', { mode: 0o600 })
  const nodeArgs = flags['node-arg'].map(shellQuote).join(' ')
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

