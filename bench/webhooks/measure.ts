/**
 * What bench:webhooks measures in a phase: arrivals at the receiver against the events
 * that caused them (rate, latency, duplicates), the CPU of each process meanwhile, and
 * each delivery's latency split from the store.
 */
import { machineCpuSeconds, processCpuSeconds, processesCpuSeconds, type RunningServer } from '../lib/server.js'
import type { ReceivedRecords, Receiver } from './receiver-client.js'
import type { RecordedDelivery } from './store.js'

export const now = () => performance.timeOrigin + performance.now()
const sorted = (xs: number[]) => Float64Array.from(xs).sort()
/** Nearest-rank percentile. */
export function percentile(xs: number[] | Float64Array, p: number): number {
  const s = xs instanceof Float64Array ? xs : sorted(xs)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}
export const median = (xs: number[]) => percentile(xs, 50)

export interface CpuMark {
  server: number | undefined
  postgres: number | undefined
  receiver: number | undefined
  machine: { busy: number; total: number } | undefined
  self: NodeJS.CpuUsage
  at: number
}

export interface Cpu {
  /** Percent of one core over the phase. */
  server: number | undefined
  postgres: number | undefined
  receiver: number | undefined
  bench: number
  other: number | undefined
  /** Server CPU time per delivery, µs. */
  serverMicrosPerDelivery: number | undefined
  postgresMicrosPerDelivery: number | undefined
}

export function markCpu(server: RunningServer | undefined, receiver: Receiver, store: 'sqlite' | 'postgres'): CpuMark {
  return {
    server: server ? processCpuSeconds(server.pid) : undefined,
    postgres: store === 'postgres' ? processesCpuSeconds('postgres') : undefined,
    receiver: processCpuSeconds(receiver.pid),
    machine: machineCpuSeconds(),
    self: process.cpuUsage(),
    at: now(),
  }
}

export function cpuSince(before: CpuMark, after: CpuMark, deliveries: number): Cpu {
  const wallS = (after.at - before.at) / 1000
  const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a)
  const server = diff(before.server, after.server)
  const postgres = diff(before.postgres, after.postgres)
  const receiver = diff(before.receiver, after.receiver)
  const self = (after.self.user - before.self.user + after.self.system - before.self.system) / 1e6
  const machine = before.machine && after.machine ? after.machine.busy - before.machine.busy : undefined
  const perCore = (s: number | undefined) => (s === undefined ? undefined : (s / wallS) * 100)
  return {
    server: perCore(server),
    postgres: perCore(postgres),
    receiver: perCore(receiver),
    bench: perCore(self)!,
    other: machine === undefined ? undefined : Math.max(0, perCore(machine - (server ?? 0) - (postgres ?? 0) - (receiver ?? 0) - self)!),
    serverMicrosPerDelivery: server === undefined ? undefined : (server * 1e6) / deliveries,
    postgresMicrosPerDelivery: postgres === undefined ? undefined : (postgres * 1e6) / deliveries,
  }
}

export interface Trigger {
  contactId: string
  sentAt: number
  answeredAt: number
}

export interface Latency {
  p50: number
  p99: number
  max: number
}

export interface PhaseResult {
  deliveries: number
  seconds: number
  deliveriesPerSecond: number
  latency: Latency
  /** Per delivery, from the store: answer -> row written, row -> first attempt, attempt -> arrival. */
  split?: { fanOut: Latency; queue: Latency; send: Latency }
  cpu: Cpu
  /** Arrivals that repeat a (webhook, event) pair already received. */
  duplicates: number
  /** Arrivals of events of an earlier phase (an attempt repeated after its claim ran out). */
  strays: number
  newConnections: number
  triggers?: Trigger[]
  records?: ReceivedRecords
}

export function latencyOf(values: number[]): Latency {
  const s = sorted(values)
  return { p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? Number.NaN }
}

/** Arrivals that deliver one of `triggers`' events; the floor (no triggers) owns every arrival. */
export function ownArrivals(records: ReceivedRecords, triggers: Trigger[]): number[] {
  if (triggers.length === 0) return records.times.map((_, i) => i)
  const events = new Set(triggers.map((t) => t.contactId))
  return records.times.flatMap((_, i) => (events.has(records.contacts[i]!) ? [i] : []))
}

export function summarize(records: ReceivedRecords, triggers: Trigger[], startedAt: number, cpu: Cpu): PhaseResult {
  const answeredAt = new Map(triggers.map((t) => [t.contactId, t.answeredAt]))
  const own = ownArrivals(records, triggers)
  const latencies: number[] = []
  const seen = new Set<string>()
  let duplicates = 0
  let last = startedAt
  for (const i of own) {
    const key = `${records.paths[i]}:${records.contacts[i]}`
    if (seen.has(key)) duplicates++
    seen.add(key)
    last = Math.max(last, records.times[i]!)
    if (triggers.length > 0) latencies.push(records.times[i]! - answeredAt.get(records.contacts[i]!)!)
  }
  const seconds = (last - startedAt) / 1000
  const deliveries = seen.size
  return {
    deliveries,
    seconds,
    deliveriesPerSecond: deliveries / seconds,
    latency: latencyOf(latencies),
    cpu,
    duplicates,
    strays: records.times.length - own.length,
    newConnections: records.connections,
    triggers,
    records,
  }
}

/** Answer -> row, row -> attempt, attempt -> arrival for each delivery of the phase, from the store. */
export function splitOf(phase: PhaseResult, byKey: Map<string, RecordedDelivery>, webhookIndex: Map<string, number>): PhaseResult['split'] {
  const answeredAt = new Map(phase.triggers!.map((t) => [t.contactId, t.answeredAt]))
  const arrivals = new Map<string, number>()
  const { paths, contacts, times } = phase.records!
  for (let i = 0; i < times.length; i++) arrivals.set(`${paths[i]}:${contacts[i]}`, times[i]!)
  const fanOut: number[] = []
  const queue: number[] = []
  const send: number[] = []
  for (const delivery of byKey.values()) {
    const answered = answeredAt.get(delivery.contactId)
    if (answered === undefined || delivery.firstAttemptAt === undefined) continue
    const arrival = arrivals.get(`${webhookIndex.get(delivery.webhookId)}:${delivery.contactId}`)
    fanOut.push(delivery.createdAt - answered)
    queue.push(delivery.firstAttemptAt - delivery.createdAt)
    if (arrival !== undefined) send.push(arrival - delivery.firstAttemptAt)
  }
  return { fanOut: latencyOf(fanOut), queue: latencyOf(queue), send: latencyOf(send) }
}
