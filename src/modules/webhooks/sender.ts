import type { Readable } from 'node:stream'
import { request, type Dispatcher } from 'undici'
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

class AttemptTimeout extends Error {}

/**
 * One signed POST of a delivery. The whole exchange (connection, request, response and
 * the first KiB of its body) has `timeoutMs`; a 2xx status within it is a success,
 * anything else a failure. Redirects are not followed. The body is read up to 1 KiB
 * and the connection closed on anything longer or slower, so a receiver cannot hold
 * it; a complete short answer leaves the connection open for the next delivery.
 * `controller` lets the caller cut the attempt short (shutdown, a lost claim): one
 * controller per attempt serves both that and the timeout.
 */
export async function sendAttempt(agent: Dispatcher, attempt: Attempt, at: Date, timeoutMs: number, controller = new AbortController()): Promise<AttemptResult> {
  const started = performance.now()
  const timer = setTimeout(() => controller.abort(new AttemptTimeout()), timeoutMs)
  const elapsed = () => Math.round(performance.now() - started)
  try {
    const response = await request(attempt.endpoint, {
      method: 'POST',
      dispatcher: agent,
      signal: controller.signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'messaging-platform-webhooks/1.0',
        ...signedHeaders(attempt.secrets, attempt.eventId, at, attempt.body),
      },
      body: attempt.body,
    })
    const statusCode = response.statusCode
    const responseBody = await readPrefix(response.body, RESPONSE_BODY_BYTES)
    const success = statusCode >= 200 && statusCode < 300
    return {
      statusCode,
      success,
      outcome: success ? 'delivered' : 'failed',
      durationMs: elapsed(),
      error: success ? null : `the endpoint answered ${statusCode}`,
      responseBody,
      retryAfterMs: statusCode === 429 || statusCode === 503 ? retryAfterMs(response.headers['retry-after'], at) : undefined,
      gone: statusCode === 410,
    }
  } catch (err) {
    const timedOut = controller.signal.reason instanceof AttemptTimeout
    const error = timedOut ? `no response within ${timeoutMs} ms` : describe(err)
    const refused = err instanceof RefusedDestination || (err as { cause?: unknown } | undefined)?.cause instanceof RefusedDestination
    const outcome = timedOut ? 'timeout' : refused ? 'refused' : 'failed'
    return { statusCode: 0, success: false, outcome, durationMs: elapsed(), error, responseBody: null, retryAfterMs: undefined, gone: false }
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The first `limit` bytes of a body, as text. Stops at the limit, at the end, or when the
 * attempt's time runs out, whichever comes first; a body left unread is destroyed, which
 * closes its connection instead of leaving it to the receiver.
 */
async function readPrefix(body: Readable, limit: number): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      size += chunk.length
      if (size >= limit) break
    }
  } catch {
    // Timed out or cut off while reading: keep what came.
  } finally {
    if (!body.readableEnded) body.destroy()
  }
  if (size === 0) return null
  // PostgreSQL text cannot hold NUL.
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8').replaceAll('\u0000', '\uFFFD')
}

function retryAfterMs(header: string | string[] | undefined, now: Date): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
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
