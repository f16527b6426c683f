import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Forbidden, Unauthorized } from '../problems.js'
import { scopeAllows, type Principal, type RouteAuth } from './principal.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth
  }
  interface FastifyRequest {
    principal: Principal
  }
}

type ApiKeyPrincipal = Extract<Principal, { kind: 'apiKey' }>
type SessionPrincipal = Extract<Principal, { kind: 'session' }>

/** How credentials are checked; the keys and accounts modules provide these. */
export interface Authenticators {
  /** Null when the key is unknown or revoked; a revoked key fails from the next request on. */
  verifyApiKey(rawKey: string): Promise<ApiKeyPrincipal | null>
  /** Null when the token is not a valid, unexpired session JWT. */
  verifySession(token: string): Promise<SessionPrincipal | null>
  adminToken: string | undefined
}

const API_KEY_PATTERN = /^mk_(live|test)_[0-9A-Za-z]{32}$/

/**
 * Resolves the caller of every route from the route's declared `config.auth`, in one
 * hook that runs before the body is read. A route without a declaration fails at start.
 */
export function installAuth(app: FastifyInstance, authenticators: Authenticators): void {
  app.decorateRequest('principal', null as never)

  app.addHook('onRoute', (route) => {
    const owned = route.url.startsWith('/v1/') || route.url === '/healthz' || route.url === '/readyz'
    if (owned && route.config?.auth === undefined) {
      throw new Error(`route ${route.method} ${route.url} does not declare config.auth`)
    }
  })

  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config.auth
    if (auth === undefined || auth === 'public') {
      request.principal = { kind: 'anonymous' }
      return
    }
    const token = bearerToken(request)
    if (token === undefined) throw new Unauthorized('Send Authorization: Bearer <credential>')

    if (auth.accepts.includes('admin')) {
      if (authenticators.adminToken !== undefined && sameSecret(token, authenticators.adminToken)) {
        request.principal = { kind: 'admin' }
        return
      }
      if (auth.accepts.length === 1) throw new Unauthorized('Invalid admin token')
    }

    if (token.startsWith('mk_')) {
      const key = API_KEY_PATTERN.test(token) ? await authenticators.verifyApiKey(token) : null
      if (key === null) throw new Unauthorized('The API key is invalid or revoked')
      if (!auth.accepts.includes('apiKey')) {
        throw new Forbidden('This endpoint takes a dashboard session, not an API key')
      }
      if (!scopeAllows(key.permission, auth.area ?? 'general')) {
        throw new Forbidden(`An API key with ${key.permission} permission may not call this endpoint`)
      }
      request.principal = key
      return
    }

    const session = auth.accepts.includes('session') ? await authenticators.verifySession(token) : null
    if (session === null) throw new Unauthorized('The session token is invalid or expired')
    request.principal = session
  })
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  if (header === undefined) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

// Compares digests so neither the length nor the content leaks through timing.
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/** The account the caller acts for; routes that take an account credential only. */
export function accountIdOf(request: FastifyRequest): string {
  const principal = request.principal
  if (principal.kind === 'apiKey' || principal.kind === 'session') return principal.accountId
  throw new Error('route declared account auth but the principal has no account')
}
