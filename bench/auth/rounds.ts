import { fmt, measure, problemsOf, waitQuiet, type Measurement } from '../lib/load.js'
import type { AuthContext } from './options.js'
import type { Setup, Variant } from './setup.js'

export type Kind = 'trivial' | 'authed' | 'readyz' | 'session'
export const KIND_LABEL: Record<Kind, string> = {
  trivial: 'GET /healthz (public, no store)',
  authed: 'GET /v1/account, API key',
  readyz: 'GET /readyz (public, one select 1)',
  session: 'GET /v1/account, session JWT',
}

export interface Round {
  round: number
  attempt: number
  order: Kind[]
  runs: Partial<Record<Kind, Measurement>>
  quietBefore: { quiet: boolean; busyPct: number; waitedS: number }
  noisy: boolean
}

/** A round over every variant: the figures of each, as report() reads them for one. */
export interface SharedRound extends Omit<Round, 'runs'> {
  variantOrder: Variant['name'][]
  runs: Partial<Record<Variant['name'], Partial<Record<Kind, Measurement>>>>
}

export const roundOf = (shared: SharedRound, variant: Variant['name']): Round => ({ ...shared, runs: shared.runs[variant]! })

/**
 * Warm-up, then --rounds rounds of every route on every variant, in alternating order; a
 * round in which other work took more than --noise is set aside and measured again.
 */
export async function run(setups: Setup[], { options, log }: Pick<AuthContext, 'options' | 'log'>): Promise<{ kept: SharedRound[]; noisy: SharedRound[] }> {
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
