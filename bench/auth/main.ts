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
 * Parts: setup.ts (servers, stores, sign-up), rounds.ts (the measured runs), report.ts (the
 * tables and verdicts).
 *
 * The server is a child process (`node .bench/dist/main.js`, compiled first; or
 * `node --import tsx src/main.ts` with --server tsx); autocannon runs in this process,
 * so load generator and server have a core each on a 2-core machine (PostgreSQL, when
 * used, shares them).
 */
import { writeFileSync } from 'node:fs'
import { flag, parseFlags, positiveInteger, positiveIntegerOrZero, positiveNumber } from '../lib/flags.js'
import { buildCommit, Cleanups, type ServerMode } from '../lib/server.js'
import type { AuthContext, AuthOptions } from './options.js'
import { compare, report } from './report.js'
import { roundOf, run } from './rounds.js'
import { describeCode, setUp, type Setup, type Variant } from './setup.js'

// Numbers as text, checked below once --help and --store have had their turn.
const { flags } = parseFlags({
  store: flag.string(),
  rounds: flag.string('5'),
  duration: flag.string('10'),
  warmup: flag.string('5'),
  connections: flag.string('50'),
  pipelining: flag.string('1'),
  server: flag.string('dist'),
  target: flag.string(),
  'session-target': flag.string('0.95'),
  commit: flag.string(),
  json: flag.string(),
  'cpu-prof': flag.string(),
  strict: flag.boolean(),
  breakdown: flag.boolean(),
  entry: flag.string(),
  'wait-quiet': flag.string('30'),
  noise: flag.string('25'),
  'retry-noisy': flag.string('2'),
  help: flag.boolean(),
})

if (flags.help) {
  console.log(`usage: npm run bench:auth -- [--store sqlite|postgres] [--rounds 5] [--duration 10] [--warmup 5]
       [--connections 50] [--pipelining 1] [--server dist|tsx] [--target 0.6 (SQLite) | 0.25 (PostgreSQL)]
       [--session-target 0.95] [--json FILE] [--cpu-prof DIR] [--strict]
       [--breakdown] [--entry FILE] [--commit REV] [--wait-quiet 30] [--noise 25] [--retry-noisy 2]
env: BENCH_DATABASE_URL=postgres://... (implies --store postgres; a fresh database is created beside it and dropped)`)
  process.exit(0)
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
const options: AuthOptions = {
  store,
  rounds: positiveInteger('rounds', flags.rounds),
  duration: positiveInteger('duration', flags.duration),
  warmup: positiveIntegerOrZero('warmup', flags.warmup),
  connections: positiveInteger('connections', flags.connections),
  pipelining: positiveInteger('pipelining', flags.pipelining),
  server: flags.server as ServerMode,
  target: positiveNumber('target', flags.target ?? (store === 'postgres' ? '0.25' : '0.6')),
  sessionTarget: positiveNumber('session-target', flags['session-target']),
  breakdown: flags.breakdown,
  waitQuiet: positiveIntegerOrZero('wait-quiet', flags['wait-quiet']),
  noise: positiveNumber('noise', flags.noise),
  retryNoisy: positiveIntegerOrZero('retry-noisy', flags['retry-noisy']),
}

const log = (message: string) => process.stderr.write(`${message}\n`)

// ------------------------------------------------------------------ cleanup
const cleanups = new Cleanups(log)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping`)
    void cleanups.run().finally(() => process.exit(130))
  })
}
const context: AuthContext = { options, benchUrl, cpuProf: flags['cpu-prof'], cleanups, log }

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
  for (const variant of variants) setups.push(await setUp(variant, context))
  const rounds = await run(setups, context)
  const results = setups.map((setup) =>
    report(setup, rounds.kept.map((r) => roundOf(r, setup.variant.name)), rounds.noisy.map((r) => roundOf(r, setup.variant.name)), options),
  )
  if (results.length > 1) console.log(compare(setups, results.map((r) => r.medians), options))
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

