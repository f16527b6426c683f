import type { Dispatcher } from 'undici'
import { signedHeaders } from './signing.js'
import { RefusedDestination } from './ssrf.js'

/** How much of a response body is kept in the log. */
export const RESPONSE_BODY_BYTES = 1024

export interface Attempt {
  endpoint: string
  eventId: string
  /** The exact bytes that are signed and sent. */
  body: string
  /** Every secret that signs: the current one, and a rotated-out one still in its grace period. */
  secrets: readonly string[]
}

/** How an attempt ended, for metrics: a 2xx, another answer or a connection error, no answer in time, or refused by the SSRF guard. */
export type DeliveryOutcome = 'delivered' | 'failed' | 'timeout' | 'refused'

export interface AttemptResult {
  /** 0 when no response came. */
  statusCode: number
  success: boolean
  outcome: DeliveryOutcome
  durationMs: number
  error: string | null
  responseBody: string | null
  /** A 429 or 503 answer's Retry-After, in milliseconds. */
  retryAfterMs: number | undefined
  /** The receiver answered 410 Gone: it wants no more deliveries. */
  gone: boolean
}

/** An attempt on its way: how it ends, and a way to cut it short (shutdown, a lost claim). */
export interface AttemptInFlight {
  /** Never rejects. */
  readonly result: Promise<AttemptResult>
  /** Why it was cut short, if it was: an answer that came in time still counts. */
  readonly interruptedBy: string | undefined
  /**
   * When it started (its signature's timestamp, its log's deliveredAt): the instant given,
   * moved on by however long it waited for a slot. Final once `result` has settled.
   */
  readonly startedAt: Date
  interrupt(why: string): void
}

/** Starts an attempt: in this thread (sendAttempt) or in the sender thread (SenderThread). */
export type SendAttempt = (attempt: Attempt, at: Date, timeoutMs: number) => AttemptInFlight

/** How an attempt that got no answer ends: status 0, failed. */
export function noAnswer(error: string, outcome: DeliveryOutcome = 'failed', durationMs = 0): AttemptResult {
  return { statusCode: 0, success: false, outcome, durationMs, error, responseBody: null, retryAfterMs: undefined, gone: false }
}

class AttemptTimeout extends Error {}
class BodyCutOff extends Error {}

/** Origin and path of recently used endpoints: a busy worker posts to the same few thousand over and over. */
const targets = new Map<string, { origin: string; path: string }>()
const MAX_TARGETS = 10_000

function targetOf(endpoint: string): { origin: string; path: string } {
  let target = targets.get(endpoint)
  if (target === undefined) {
    const url = new URL(endpoint)
    target = { origin: url.origin, path: `${url.pathname}${url.search}` }
    if (targets.size >= MAX_TARGETS) targets.clear()
    targets.set(endpoint, target)
  }
  return target
}

/**
 * One signed POST of a delivery, in flight. The whole exchange (connection, request,
 * response and the first KiB of its body) has `timeoutMs`; a 2xx status within it is a
 * success, anything else a failure. Redirects are not followed. The body is read up to
 * 1 KiB and the connection closed on anything longer or slower, so a receiver cannot
 * hold it; a complete short answer leaves the connection open for the next delivery.
 *
 * It is undici's dispatch handler itself rather than a `request()` with a body stream
 * and an AbortSignal: a worker sends thousands a second, and those were a large share
 * of an attempt's cost.
 */
export class SentAttempt implements Dispatcher.DispatchHandler, AttemptInFlight {
  readonly result: Promise<AttemptResult>
  interruptedBy: string | undefined
  readonly startedAt: Date
  private settle!: (result: AttemptResult) => void
  private ended = false
  private controller: Dispatcher.DispatchController | undefined
  /** Set when the attempt ended before undici started it: it is aborted as soon as it starts. */
  private endedBeforeStart: Error | undefined
  private readonly started = performance.now()
  private readonly timer: NodeJS.Timeout
  private statusCode = 0
  private retryAfter: string | undefined
  private readonly chunks: Buffer[] = []
  private size = 0

  constructor(
    agent: Dispatcher,
    attempt: Attempt,
    private readonly at: Date,
    private readonly timeoutMs: number,
  ) {
    this.startedAt = at
    this.result = new Promise((resolve) => (this.settle = resolve))
    this.timer = setTimeout(() => this.cutShort(new AttemptTimeout()), timeoutMs)
    const signed = signedHeaders(attempt.secrets, attempt.eventId, at, attempt.body)
    try {
      const { origin, path } = targetOf(attempt.endpoint)
      const headers = [
        'content-type', 'application/json',
        'user-agent', 'messaging-platform-webhooks/1.0',
        'webhook-id', signed['webhook-id']!,
        'webhook-timestamp', signed['webhook-timestamp']!,
        'webhook-signature', signed['webhook-signature']!,
      ]
      agent.dispatch({ origin, path, method: 'POST', headers, body: attempt.body }, this)
    } catch (err) {
      this.finish(err)
    }
  }

  /** Cuts the attempt short: shutting down, or its claim was lost. An answer that already came still counts. */
  interrupt(why: string): void {
    this.interruptedBy ??= why
    this.cutShort(new Error(why))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.endedBeforeStart) controller.abort(this.endedBeforeStart)
    else this.controller = controller
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.statusCode = statusCode
    const retryAfter = headers['retry-after']
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.ended) return
    this.chunks.push(chunk)
    this.size += chunk.length
    if (this.size >= RESPONSE_BODY_BYTES) {
      this.finish()
      // The rest is not read: closing the connection is cheaper than draining an endless body.
      controller.abort(new BodyCutOff('response body longer than kept'))
    }
  }

  onResponseEnd(): void {
    this.finish()
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.finish(error)
  }

  /** Ends the attempt now (timed out or interrupted) with what came so far, and aborts the exchange. */
  private cutShort(reason: Error): void {
    if (this.ended) return
    this.finish(reason)
    if (this.controller) this.controller.abort(reason)
    else this.endedBeforeStart = reason
  }

  /** An answer (its status came, even if its body was cut short) or, without one, the error. */
  private finish(error?: unknown): void {
    if (this.ended) return
    this.ended = true
    clearTimeout(this.timer)
    this.settle(this.statusCode > 0 ? this.answered() : this.failed(error))
  }

  private answered(): AttemptResult {
    const statusCode = this.statusCode
    const success = statusCode >= 200 && statusCode < 300
    return {
      statusCode,
      success,
      outcome: success ? 'delivered' : 'failed',
      durationMs: this.elapsedMs(),
      error: success ? null : `the endpoint answered ${statusCode}`,
      responseBody: this.bodyPrefix(),
      retryAfterMs: statusCode === 429 || statusCode === 503 ? retryAfterMs(this.retryAfter, this.at) : undefined,
      gone: statusCode === 410,
    }
  }

  private failed(err: unknown): AttemptResult {
    const timedOut = err instanceof AttemptTimeout
    const error = timedOut ? `no response within ${this.timeoutMs} ms` : describe(err)
    const refused = err instanceof RefusedDestination || (err as { cause?: unknown } | undefined)?.cause instanceof RefusedDestination
    const outcome = timedOut ? 'timeout' : refused ? 'refused' : 'failed'
    return noAnswer(error, outcome, this.elapsedMs())
  }

  private elapsedMs(): number {
    return Math.round(performance.now() - this.started)
  }

  /** The first KiB of the body, as text. */
  private bodyPrefix(): string | null {
    if (this.size === 0) return null
    const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
    // PostgreSQL text cannot hold NUL.
    return bytes.subarray(0, RESPONSE_BODY_BYTES).toString('utf8').replaceAll('\u0000', '\uFFFD')
  }
}

/** Starts one signed POST of a delivery; see SentAttempt. */
export function sendAttempt(agent: Dispatcher, attempt: Attempt, at: Date, timeoutMs: number): SentAttempt {
  return new SentAttempt(agent, attempt, at, timeoutMs)
}

function retryAfterMs(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime())
}

/** A short, safe description of why no response came (refused, reset, TLS, refused destination). */
function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { message?: string; code?: string } }
  const parts = [e.code, e.message, e.cause?.message].filter((p): p is string => typeof p === 'string' && p !== '')
  const text = [...new Set(parts)].join(': ') || 'the request failed'
  return text.slice(0, 500)
}
