import { Agent, request } from 'undici'
import { benchPhoneNumber } from './contacts.js'

/**
 * A client that waits as long as the server takes: a server that does not accept for
 * many seconds makes new connections wait in the kernel's queue (or retry their SYN);
 * that wait is part of the latency measured, not a client-side timeout.
 */
export const patientAgent = new Agent({ connect: { timeout: 300_000 }, headersTimeout: 300_000, bodyTimeout: 300_000 })

/**
 * An open-loop probe: one request every `intervalMs` whatever the previous answer took
 * (a slow answer does not delay the next request), each timed from its sending to the
 * end of its body. `init` makes each request (a GET with headers, or a POST with a body).
 */
export interface ProbeSample {
  /** performance.now() when sent. */
  sentAt: number
  ms: number
  status: number
}

export interface ProbeStats {
  count: number
  p50: number
  p99: number
  max: number
  failed: number
}

/** What each request of a probe sends. */
export interface ProbeRequest {
  method?: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
}

export class Probe implements ProbeRecord {
  readonly samples: ProbeSample[] = []
  private readonly pending = new Set<Promise<void>>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly url: string,
    private readonly init: () => ProbeRequest,
    private readonly intervalMs: number,
    private readonly okStatus = 200,
  ) {}

  start(): void {
    // Timers slip on a busy machine; each tick sends every request due by now, so the
    // rate holds on average.
    const started = performance.now()
    let sent = 0
    this.timer = setInterval(() => {
      const due = Math.floor((performance.now() - started) / this.intervalMs)
      for (; sent < due; sent++) this.send()
    }, Math.max(1, Math.min(this.intervalMs, 10)))
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await Promise.all(this.pending)
  }

  private send(): void {
    const sentAt = performance.now()
    // undici's request(), not fetch(): a fraction of fetch's CPU per request, which the
    // probes would otherwise take from the cores the server shares with them.
    const sent = request(this.url, { method: 'GET', ...this.init(), dispatcher: patientAgent })
      .then(async (response) => {
        await response.body.arrayBuffer()
        this.samples.push({ sentAt, ms: performance.now() - sentAt, status: response.statusCode })
      })
      .catch(() => void this.samples.push({ sentAt, ms: performance.now() - sentAt, status: 0 }))
    this.pending.add(sent)
    void sent.finally(() => this.pending.delete(sent))
  }

  /** Requests sent in [from, to). */
  stats(from: number, to: number): ProbeStats {
    return statsOf(this.samples, from, to, this.okStatus)
  }
}

/** A probe's samples as they were taken, wherever: in this process or in probe-process.ts. */
export interface ProbeRecord {
  readonly samples: readonly ProbeSample[]
  stats(from: number, to: number): ProbeStats
}

/** The samples sent in [from, to) (performance.now() of this process): latencies, and answers other than `okStatus`. */
export function statsOf(samples: readonly ProbeSample[], from: number, to: number, okStatus: number): ProbeStats {
  const mine = samples.filter((s) => s.sentAt >= from && s.sentAt < to)
  const ms = mine.map((s) => s.ms)
  return { count: mine.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms.length === 0 ? Number.NaN : Math.max(...ms), failed: mine.filter((s) => s.status !== okStatus).length }
}

/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** One open-loop probe: a GET with the key, or (with `send`) a POST /v1/sms/send of one recipient, numbers counting up from `send.from`. */
export interface ProbeSpec {
  url: string
  token: string
  intervalMs: number
  okStatus: number
  send?: { from: number; content: string; senderId: string }
}

export function probeOf(spec: ProbeSpec): Probe {
  const headers = { authorization: `Bearer ${spec.token}` }
  if (!spec.send) return new Probe(spec.url, () => ({ headers }), spec.intervalMs, spec.okStatus)
  const { from, content, senderId } = spec.send
  let n = 0
  const body = () => JSON.stringify({ recipients: [benchPhoneNumber(from + n++)], content, senderId })
  return new Probe(spec.url, () => ({ method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: body() }), spec.intervalMs, spec.okStatus)
}
