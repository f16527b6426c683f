/** What compare.sh leaves per scenario (each run's JSON, summary.json), read back and held against the targets. */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export const SCENARIOS = ['fanout', 'spread', 'idle', 'replay'] as const
export type Scenario = (typeof SCENARIOS)[number]
/** The targets. */
export const TARGET = { p99Ratio: 2, p99Ms: 100, bytesPerConnection: 14_000 }

export type HarnessResult = {
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

export interface Summary {
  targets: Record<string, { runs: number; ok: number; medians: Record<string, number | null> }>
  ratios?: { p50: number | null; p99: number | null; bytesPerConnection: number | null }
}

export interface ScenarioOutcome {
  scenario: Scenario
  exitCode: number
  dir: string
  summary: Summary | undefined
  runs: { target: string; n: number; noisy: boolean; result: HarnessResult }[]
}

export function collect(scenario: Scenario, dir: string, exitCode: number): ScenarioOutcome {
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

export const num = (v: number | null | undefined, digits = 2) => (typeof v === 'number' && Number.isFinite(v) ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-')

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export interface Verdict {
  scenario: Scenario
  metric: string
  nchan: number | null
  platform: number | null
  ratio: number | null
  target: string
  met: boolean | undefined
}

export function verdicts(outcome: ScenarioOutcome): Verdict[] {
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
