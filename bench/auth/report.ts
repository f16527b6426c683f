import { cpus } from 'node:os'
import { fmt, median, table, type Measurement } from '../lib/load.js'
import type { AuthOptions } from './options.js'
import { KIND_LABEL, type Kind, type Round } from './rounds.js'
import type { Setup } from './setup.js'

/** The medians report() returns per route, as compare() reads them. */
export type Medians = Record<string, { requestsPerSecond: number; p99: number; serverMicrosPerRequest: number; storeMicrosPerRequest: number }>

/** Prints one variant's rounds, medians and verdicts (stdout); returns them for --json and compare(). */
export function report(setup: Setup, kept: Round[], noisy: Round[], options: AuthOptions): { ratio: number; pass: boolean; summary: object; medians: Medians } {
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
export function compare(setups: Setup[], medians: Medians[], options: AuthOptions): string {
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
