import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scopeAllows, type Permission, type RouteArea } from '../../src/platform/http/principal.js'
import { createKey, expectProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type ApiResponse, type TestServer } from '../support/harness.js'

const ADMIN_TOKEN = 'admin-token-0123456789'

/** The credentials every route is tried with, in the column order of the matrix below. */
const CREDENTIALS = ['Sms', 'Full', 'Playground', 'session', 'none', 'revoked', 'admin'] as const
type Credential = (typeof CREDENTIALS)[number]

interface Call {
  method: string
  path: string
  body?: unknown
}

interface Context {
  server: TestServer
  account: TestAccount
}

interface RouteRow {
  /** Method and path as the OpenAPI document names them. */
  route: string
  /** Builds the request; runs before every call, so a call that succeeds never spoils the next. */
  call(ctx: Context): Promise<Call>
  /** What the route would change; a refused call must leave it as it was. */
  state?(ctx: Context, call: Call): Promise<unknown>
  /** Expected status per credential, in the order of CREDENTIALS. */
  expected: readonly [number, number, number, number, number, number, number]
}

/**
 * The scope matrix (api.md: key management and PATCH /account take a session only, so
 * an API key gets 403; GET /account takes any key; /admin takes the admin token only,
 * anything else 401). A new route gets a row here.
 */
const ROUTES: RouteRow[] = [
  //                                                                      Sms  Full Play sess none revk admin
  { route: 'GET /v1/account', call: fixed('GET', '/v1/account'), expected: [200, 200, 200, 200, 401, 401, 401] },
  {
    route: 'PATCH /v1/account',
    call: fixed('PATCH', '/v1/account', { name: `renamed ${randomUUID()}` }),
    state: accountState,
    expected: /*                                                      */ [403, 403, 403, 200, 401, 401, 401],
  },
  { route: 'GET /v1/keys', call: fixed('GET', '/v1/keys'), expected: [403, 403, 403, 200, 401, 401, 401] },
  {
    route: 'POST /v1/keys',
    call: fixed('POST', '/v1/keys', { name: 'matrix' }),
    state: keyIds,
    expected: /*                                                      */ [403, 403, 403, 201, 401, 401, 401],
  },
  {
    route: 'DELETE /v1/keys/{keyId}',
    call: async (ctx) => ({ method: 'DELETE', path: `/v1/keys/${await freshKeyId(ctx)}` }),
    state: keyIds,
    expected: /*                                                      */ [403, 403, 403, 204, 401, 401, 401],
  },
  {
    route: 'POST /v1/admin/accounts/{accountId}/credits',
    call: async (ctx) => ({ method: 'POST', path: `/v1/admin/accounts/${ctx.account.accountId}/credits`, body: { amount: 1 } }),
    state: accountState,
    expected: /*                                                      */ [401, 401, 401, 401, 401, 401, 200],
  },
]

/** Routes anyone may call; every other documented route must declare a credential. */
// The push stream declares no API credential: its push token travels in the query (tested in src/modules/push).
const PUBLIC_ROUTES = ['GET /healthz', 'GET /readyz', 'POST /v1/auth/signup', 'POST /v1/auth/login', 'GET /v1/push/stream']

function fixed(method: string, path: string, body?: unknown): RouteRow['call'] {
  return async () => ({ method, path, ...(body === undefined ? {} : { body }) })
}

async function accountState(ctx: Context): Promise<unknown> {
  return (await ctx.server.get('/v1/account', { token: ctx.account.session })).body
}

async function keyIds(ctx: Context): Promise<string[]> {
  const response = await ctx.server.get('/v1/keys?pageSize=100', { token: ctx.account.session })
  return response.body.items.map((k: { id: string }) => k.id)
}

async function freshKeyId(ctx: Context): Promise<string> {
  const name = `doomed ${randomUUID()}`
  await createKey(ctx.server, ctx.account, 'Full', name)
  const list = await ctx.server.get('/v1/keys?pageSize=100', { token: ctx.account.session })
  return list.body.items.find((k: { name: string }) => k.name === name).id
}

let ctx: Context
const tokens = {} as Record<Credential, string | undefined>

beforeAll(async () => {
  const server = await startServer({ config: { adminToken: ADMIN_TOKEN } })
  const account = await signUp(server, 'Matrix Ltd')
  ctx = { server, account }
  tokens.Sms = await createKey(server, account, 'Sms', 'sms')
  tokens.Full = await createKey(server, account, 'Full', 'full')
  tokens.Playground = await createKey(server, account, 'Playground', 'playground')
  tokens.session = account.session
  tokens.none = undefined
  tokens.admin = ADMIN_TOKEN
  const revoked = await createKey(server, account, 'Full', 'revoked')
  const list = await server.get('/v1/keys?pageSize=100', { token: account.session })
  const id = list.body.items.find((k: { name: string }) => k.name === 'revoked').id
  expect((await server.delete(`/v1/keys/${id}`, { token: account.session })).status).toBe(204)
  tokens.revoked = revoked
})
afterAll(() => ctx.server.close())

function send(call: Call, credential: Credential): Promise<ApiResponse> {
  const token = tokens[credential]
  return ctx.server.request(call.method, call.path, {
    ...(token ? { token } : {}),
    ...(call.body === undefined ? {} : { body: call.body }),
  })
}

describe.each(ROUTES)('$route', (row) => {
  it.each(CREDENTIALS.map((credential, column) => [credential, row.expected[column]!] as const))(
    'with %s credentials answers %i',
    async (credential, status) => {
      const call = await row.call(ctx)
      const before = status >= 400 && row.state ? await row.state(ctx, call) : undefined
      const response = await send(call, credential)
      if (status >= 400) {
        expectProblem(response, status, status === 401 ? 'unauthorized' : 'forbidden')
        if (status === 401) expect(response.headers.get('www-authenticate')).toBe('Bearer')
        if (row.state) expect(await row.state(ctx, call)).toEqual(before)
      } else {
        expect(response.status).toBe(status)
      }
    },
  )
})

interface DocumentedRoute {
  route: string
  method: string
  path: string
  /** Credential kinds the route declares in OpenAPI `security`; empty for public routes. */
  accepts: string[]
}

async function documentedRoutes(): Promise<DocumentedRoute[]> {
  const response = await ctx.server.get('/v1/openapi.json')
  expect(response.status).toBe(200)
  const routes: DocumentedRoute[] = []
  for (const [path, operations] of Object.entries<Record<string, { security?: Record<string, unknown>[] }>>(response.body.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      routes.push({
        route: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        accepts: (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)),
      })
    }
  }
  return routes
}

describe('every documented route', () => {
  it('declares a credential unless it is one of the public routes', async () => {
    const routes = await documentedRoutes()
    expect(routes.filter((r) => r.accepts.length === 0).map((r) => r.route).sort()).toEqual([...PUBLIC_ROUTES].sort())
    for (const row of ROUTES) expect(routes.map((r) => r.route)).toContain(row.route)
  })

  it('takes a session wherever it takes an API key (api.md: sessions have Full rights)', async () => {
    for (const route of await documentedRoutes()) {
      if (route.accepts.includes('apiKey')) expect(route.accepts, route.route).toContain('session')
    }
  })

  // The same rules as the matrix, applied to routes without a row of their own, from api.md
  // alone: no or revoked credentials 401; a session-only route refuses keys with 403; an Sms
  // key may call /sms/* and GET /account only (403 elsewhere); /admin takes only its token.
  it('answers each credential as api.md says, before looking at the request', async () => {
    const failures: string[] = []
    for (const route of await documentedRoutes()) {
      if (route.accepts.length === 0) continue
      const call: Call = {
        method: route.method,
        path: route.path.replace(/\{[^}]+\}/g, () => randomUUID()),
        ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { body: {} } : {}),
      }
      for (const credential of CREDENTIALS) {
        const expected = expectedByRule(route, credential)
        const response = await send(call, credential)
        const passedAuth = response.status !== 401 && response.status !== 403
        const ok = expected === 'passes' ? passedAuth : response.status === expected
        if (!ok) failures.push(`${route.route} with ${credential}: expected ${expected}, got ${response.status}`)
      }
    }
    expect(failures).toEqual([])
  })
})

function expectedByRule(route: DocumentedRoute, credential: Credential): 401 | 403 | 'passes' {
  if (credential === 'none' || credential === 'revoked') return 401
  if (route.accepts.length === 1 && route.accepts[0] === 'admin') return credential === 'admin' ? 'passes' : 401
  if (credential === 'admin') return 401
  if (credential === 'session') return route.accepts.includes('session') ? 'passes' : 401
  if (!route.accepts.includes('apiKey')) return 403
  const smsMayCall = route.path.startsWith('/v1/sms/') || route.path === '/v1/sms' || route.route === 'GET /v1/account'
  return credential === 'Sms' && !smsMayCall ? 403 : 'passes'
}

describe('scopeAllows', () => {
  const table: [Permission, RouteArea, boolean][] = [
    ['Full', 'sms', true],
    ['Full', 'accountRead', true],
    ['Full', 'general', true],
    ['Playground', 'sms', true],
    ['Playground', 'accountRead', true],
    ['Playground', 'general', true],
    ['Sms', 'sms', true],
    ['Sms', 'accountRead', true],
    ['Sms', 'general', false],
  ]

  it.each(table)('lets a %s key into the %s area: %s', (permission, area, allowed) => {
    expect(scopeAllows(permission, area)).toBe(allowed)
  })
})
