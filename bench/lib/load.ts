import { cpus } from 'node:os'
import autocannon from 'autocannon'
import { machineCpuSeconds, processCpuSeconds, processesCpuSeconds } from './server.js'

export interface LoadOptions {
  url: string
  headers?: Record<string, string>
  connections: number
  pipelining: number
  durationSeconds: number
  /** The server's PID, to charge its CPU time to the run. */
  serverPid?: number
  /** Command name of the store's processes (`postgres`), charged to the run apart. */
  storeProcess?: string
}

export interface Measurement {
  requestsPerSecond: number
  completed: number
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number }
  statusCodes: Record<string, number>
  non2xx: number
  errors: number
  timeouts: number
  durationSeconds: number
  /** Percent of one core, over the run. */
  serverCpu: number | undefined
  /** This process (autocannon), percent of one core. */
  loadGeneratorCpu: number
  /** Server CPU time per completed request, in microseconds: less sensitive to other load than req/s. */
  serverMicrosPerRequest: number | undefined
  /** The store's processes' CPU time per completed request, in microseconds. */
  storeMicrosPerRequest: number | undefined
  /** The store's server processes (PostgreSQL), percent of one core. */
  storeCpu: number | undefined
  /** CPU used by everything else on the machine (other work, interrupts), percent of one core. */
  otherCpu: number | undefined
  /** All cores, percent of the whole machine. */
  machineBusy: number | undefined
}

/** One autocannon run in this process; the server under test runs in another. */
export async function measure(options: LoadOptions): Promise<Measurement> {
  const serverBefore = options.serverPid === undefined ? undefined : processCpuSeconds(options.serverPid)
  const storeBefore = options.storeProcess === undefined ? undefined : processesCpuSeconds(options.storeProcess)
  const machineBefore = machineCpuSeconds()
  const selfBefore = process.cpuUsage()
  const wallBefore = process.hrtime.bigint()

  const result = await autocannon({
    url: options.url,
    headers: options.headers ?? {},
    connections: options.connections,
    pipelining: options.pipelining,
    duration: options.durationSeconds,
    timeout: 10,
  })

  const wall = Number(process.hrtime.bigint() - wallBefore) / 1e9
  const self = process.cpuUsage(selfBefore)
  const serverAfter = options.serverPid === undefined ? undefined : processCpuSeconds(options.serverPid)
  const storeAfter = options.storeProcess === undefined ? undefined : processesCpuSeconds(options.storeProcess)
  const machineAfter = machineCpuSeconds()

  const perCore = (seconds: number) => (seconds / wall) * 100
  const serverSeconds = serverBefore !== undefined && serverAfter !== undefined ? serverAfter - serverBefore : undefined
  const storeSeconds = storeBefore !== undefined && storeAfter !== undefined ? storeAfter - storeBefore : undefined
  const selfSeconds = (self.user + self.system) / 1e6
  const machineSeconds = machineBefore && machineAfter ? machineAfter.busy - machineBefore.busy : undefined
  const statusCodes: Record<string, number> = {}
  for (const [code, stat] of Object.entries(result.statusCodeStats)) statusCodes[code] = stat.count
  return {
    requestsPerSecond: result.requests.total / result.duration,
    completed: result.requests.total,
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.mean,
    },
    statusCodes,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSeconds: result.duration,
    serverCpu: serverSeconds === undefined ? undefined : perCore(serverSeconds),
    loadGeneratorCpu: perCore(selfSeconds),
    serverMicrosPerRequest: serverSeconds === undefined || result.requests.total === 0 ? undefined : (serverSeconds * 1e6) / result.requests.total,
    storeMicrosPerRequest: storeSeconds === undefined || result.requests.total === 0 ? undefined : (storeSeconds * 1e6) / result.requests.total,
    storeCpu: storeSeconds === undefined ? undefined : perCore(storeSeconds),
    otherCpu:
      machineSeconds === undefined || serverSeconds === undefined
        ? undefined
        : Math.max(0, perCore(machineSeconds - serverSeconds - selfSeconds - (storeSeconds ?? 0))),
    machineBusy:
      machineBefore && machineAfter
        ? ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100
        : undefined,
  }
}

/**
 * Waits (at most `maxSeconds`) for a second in which the machine, the idle server
 * included, is busy less than `thresholdPct` of one core. Returns that second's figure.
 */
export async function waitQuiet(maxSeconds: number, thresholdPct: number): Promise<{ quiet: boolean; busyPct: number; waitedS: number }> {
  const started = Date.now()
  let busyPct = Number.NaN
  for (;;) {
    const before = machineCpuSeconds()
    await new Promise((r) => setTimeout(r, 1000))
    const after = machineCpuSeconds()
    if (!before || !after) return { quiet: true, busyPct: Number.NaN, waitedS: 0 }
    busyPct = ((after.busy - before.busy) / ((after.total - before.total) || 1)) * cpus().length * 100
    const waitedS = (Date.now() - started) / 1000
    if (busyPct < thresholdPct) return { quiet: true, busyPct, waitedS }
    if (waitedS >= maxSeconds) return { quiet: false, busyPct, waitedS }
  }
}

/** Why a run cannot be counted: any response that is not 2xx, any socket error or timeout. */
export function problemsOf(m: Measurement): string[] {
  const problems: string[] = []
  if (m.non2xx > 0) problems.push(`${m.non2xx} non-2xx responses (status codes ${JSON.stringify(m.statusCodes)})`)
  if (m.errors > 0) problems.push(`${m.errors} errors`)
  if (m.timeouts > 0) problems.push(`${m.timeouts} timeouts`)
  if (m.completed === 0) problems.push('no request completed')
  return problems
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** A plain text table, columns right-aligned except the first. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export const fmt = {
  rps: (n: number) => Math.round(n).toLocaleString('en-US'),
  // autocannon records latencies in whole milliseconds: 0 means under 1 ms.
  ms: (n: number) => (n === 0 ? '<1 ms' : `${Number(n.toFixed(1))} ms`),
  ratio: (n: number) => n.toFixed(3),
  pct: (n: number | undefined) => (n === undefined ? '-' : `${Math.round(n)}%`),
}
