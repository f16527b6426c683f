import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { RateLimited } from '../problems.js'

export interface RateLimitOptions {
  perSecond: number
  /** Shared counters across nodes when set. */
  redis: Redis | undefined
}

/** The caller a limit counts against: the API key, the session's account, else the address. */
export function rateLimitKey(request: FastifyRequest): string {
  const principal = request.principal
  switch (principal?.kind) {
    case 'apiKey':
      return `key:${principal.keyId}`
    case 'session':
      return `session:${principal.accountId}`
    default:
      return `ip:${request.ip}`
  }
}

/**
 * Per-key limits on every route (a route opts out or sets its own with
 * `config.rateLimit`). Runs after the auth hook, which is added first, so the key is known.
 */
export async function installRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: options.perSecond,
    timeWindow: 1000,
    hook: 'onRequest',
    keyGenerator: rateLimitKey,
    enableDraftSpec: true,
    nameSpace: 'mp-rate:',
    ...(options.redis ? { redis: options.redis } : {}),
    errorResponseBuilder: (_request, context) =>
      new RateLimited(`Rate limit of ${context.max} requests exceeded; retry in ${context.after}`),
  })
}

/**
 * A limit checked by hand, for limits keyed on something only the body tells (the
 * email of a login). Throws 429 with Retry-After when exceeded.
 */
export function createManualLimit(
  app: FastifyInstance,
  options: { max: number; timeWindowMs: number; key: (request: FastifyRequest) => string },
): (request: FastifyRequest) => Promise<void> {
  const check = app.createRateLimit({ max: options.max, timeWindow: options.timeWindowMs, keyGenerator: options.key })
  return async (request) => {
    const result = await check(request)
    if (result.isAllowed || !result.isExceeded) return
    const problem = new RateLimited('Too many attempts; try again later')
    problem.headers['retry-after'] = String(result.ttlInSeconds)
    problem.headers['ratelimit-limit'] = String(result.max)
    problem.headers['ratelimit-remaining'] = '0'
    problem.headers['ratelimit-reset'] = String(result.ttlInSeconds)
    throw problem
  }
}
