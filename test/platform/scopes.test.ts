import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scopeAllows, type Permission, type RouteArea } from '../../src/platform/http/principal.js'
import { createKey, expectProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type ApiResponse, type TestServer } from '../support/harness.js'
import { loadOperations, type DocumentedOperation, type Operations } from '../support/operations.js'

const ADMIN_TOKEN = 'admin-token-0123456789'

/** The credentials every operation is tried with. */
const CREDENTIALS = ['Sms', 'Full', 'Playground', 'session', 'none', 'revoked', 'admin'] as const
type Credential = (typeof CREDENTIALS)[number]

/** Who may call an operation: account credentials, the operator's token, or anyone. */
type Caller = 'Sms' | 'Full' | 'Playground' | 'session'
const CALLERS: readonly Caller[] = ['Sms', 'Full', 'Playground', 'session']

/**
 * The scope matrix, one row per operationId of the document (api.md): which of an Sms,
 * Full or Playground API key and a dashboard session may call the operation; `admin`
 * for the operator's endpoints, which take the admin token only; `public` for those
 * anyone may call. Key management and PATCH /account take a session only; an Sms key
 * reaches the /v1/sms operations and GET /account only. Every operation the document
 * lists must have a row, so a new operation fails here until its access is decided.
 */
const ACCESS: Record<string, string> = {
  //                       Sms Full Playground session
  getHealth:              'public',
  getReadiness:           'public',
  signUp:                 'public',
  logIn:                  'public',
  // The push stream takes no API credential: its push token travels in the query (tested in src/modules/push).
  streamPushEvents:       'public',
  addCredits:             'admin',
  createCarrier:          'admin',
  listCarriers:           'admin',
  getCarrier:             'admin',
  updateCarrier:          'admin',
  deleteCarrier:          'admin',
  getRoutes:              'admin',
  replaceRoutes:          'admin',
  // Carriers call back without an API credential: their signature is checked instead (src/modules/messaging/routing).
  twilioStatusCallback:   'public',
  twilioInboundMessage:   'public',
  // Recipients follow tracked links from the SMS itself: the code is all there is (src/modules/messaging/links).
  followLink:             'public',
  getAccount:             'Sms Full Playground session',
  updateAccount:          '                    session',
  createKey:              '                    session',
  listKeys:               '                    session',
  revokeKey:              '                    session',
  sendSms:                'Sms Full Playground session',
  listSms:                'Sms Full Playground session',
  getSms:                 'Sms Full Playground session',
  getMessageStats:        'Sms Full Playground session',
  getErrorStats:          'Sms Full Playground session',
  exportSms:              'Sms Full Playground session',
  simulateInboundSms:     'Sms Full Playground session',
  importContacts:         '    Full Playground session',
  getContactImport:       '    Full Playground session',
  createContacts:         '    Full Playground session',
  listContacts:           '    Full Playground session',
  exportContacts:         '    Full Playground session',
  createContact:          '    Full Playground session',
  getContact:             '    Full Playground session',
  updateContact:          '    Full Playground session',
  deleteContact:          '    Full Playground session',
  createContactList:      '    Full Playground session',
  listContactLists:       '    Full Playground session',
  addContactsToList:      '    Full Playground session',
  removeContactFromList:  '    Full Playground session',
  deleteContactList:      '    Full Playground session',
  createSegment:          '    Full Playground session',
  listSegments:           '    Full Playground session',
  previewSegmentRules:    '    Full Playground session',
  getSegment:             '    Full Playground session',
  replaceSegment:         '    Full Playground session',
  deleteSegment:          '    Full Playground session',
  previewSegment:         '    Full Playground session',
  createBroadcast:        '    Full Playground session',
  listBroadcasts:         '    Full Playground session',
  getBroadcast:           '    Full Playground session',
  replaceBroadcast:       '    Full Playground session',
  deleteBroadcast:        '    Full Playground session',
  sendBroadcast:          '    Full Playground session',
  previewBroadcastMessage: '    Full Playground session',
  estimateBroadcast:      '    Full Playground session',
  pauseBroadcast:         '    Full Playground session',
  resumeBroadcast:        '    Full Playground session',
  cancelBroadcast:        '    Full Playground session',
  testSendBroadcast:      '    Full Playground session',
  createWebhook:          '    Full Playground session',
  listWebhooks:           '    Full Playground session',
  getWebhook:             '    Full Playground session',
  deleteWebhook:          '    Full Playground session',
  toggleWebhook:          '    Full Playground session',
  getWebhookSecret:       '    Full Playground session',
  rotateWebhookSecret:    '    Full Playground session',
  listWebhookLogs:        '    Full Playground session',
  retryWebhookDelivery:   '    Full Playground session',
  testWebhook:            '    Full Playground session',
  getWebhookStats:        '    Full Playground session',
  issuePushToken:         '    Full Playground session',
  publishPushEvent:       '    Full Playground session',
}

type Access = 'public' | 'admin' | Caller[]

function accessOf(operationId: string): Access {
  const row = ACCESS[operationId]
  if (row === undefined) throw new Error(`no access decided for ${operationId}`)
  if (row === 'public' || row === 'admin') return row
  return row.trim().split(/\s+/) as Caller[]
}

/** The credential kinds an operation with this access declares in its OpenAPI security, sorted. */
function securityOf(access: Access): string[] {
  if (access === 'public') return []
  if (access === 'admin') return ['admin']
  return [...(access.some((caller) => caller !== 'session') ? ['apiKey'] : []), ...(access.includes('session') ? ['session'] : [])]
}

const GUARDED = Object.keys(ACCESS).filter((operationId) => accessOf(operationId) !== 'public')

/**
 * What a credential gets before the operation looks at the request: 401 without a
 * credential, with a revoked one, or with one of a kind the operation does not take at
 * all (a session or key on an operator endpoint, the admin token elsewhere); 403 for a
 * valid account credential the operation does not let in; else it passes.
 */
function expectedFor(operationId: string, credential: Credential): 401 | 403 | 'passes' {
  const access = accessOf(operationId)
  if (access === 'public') return 'passes'
  if (credential === 'none' || credential === 'revoked') return 401
  if (access === 'admin') return credential === 'admin' ? 'passes' : 401
  if (credential === 'admin') return 401
  if (access.includes(credential)) return 'passes'
  return credential === 'session' ? 401 : 403
}

interface Context {
  server: TestServer
  account: TestAccount
}

interface Call {
  operationId: string
  params?: Record<string, string>
  body?: unknown
}

interface ExercisedRow {
  operationId: string
  /** The status of a call the operation lets in. */
  succeeds: number
  /** Path parameters and body; runs before every call, so a call that succeeds never spoils the next. */
  call?(ctx: Context): Promise<Omit<Call, 'operationId'>>
  /** What the operation would change; a refused call must leave it as it was. */
  state?(ctx: Context): Promise<unknown>
}

/**
 * Operations tried with real requests that succeed: the exact status for each
 * credential, the problem a refusal answers, and nothing changed by a refused call.
 */
const EXERCISED: ExercisedRow[] = [
  { operationId: 'getAccount', succeeds: 200 },
  { operationId: 'updateAccount', succeeds: 200, call: async () => ({ body: { name: `renamed ${randomUUID()}` } }), state: accountState },
  { operationId: 'listKeys', succeeds: 200 },
  { operationId: 'createKey', succeeds: 201, call: async () => ({ body: { name: 'matrix' } }), state: keyIds },
  { operationId: 'revokeKey', succeeds: 204, call: async (ctx) => ({ params: { keyId: await freshKeyId(ctx) } }), state: keyIds },
  {
    operationId: 'addCredits',
    succeeds: 200,
    call: async (ctx) => ({ params: { accountId: ctx.account.accountId }, body: { amount: 1 } }),
    state: accountState,
  },
]

async function accountState(ctx: Context): Promise<unknown> {
  return (await operations.request(ctx.server, 'getAccount', { token: ctx.account.session })).body
}

async function keyIds(ctx: Context): Promise<string[]> {
  const response = await operations.request(ctx.server, 'listKeys', { token: ctx.account.session, query: 'pageSize=100' })
  return response.body.items.map((k: { id: string }) => k.id)
}

async function freshKeyId(ctx: Context): Promise<string> {
  const name = `doomed ${randomUUID()}`
  await createKey(ctx.server, ctx.account, 'Full', name)
  const list = await operations.request(ctx.server, 'listKeys', { token: ctx.account.session, query: 'pageSize=100' })
  return list.body.items.find((k: { name: string }) => k.name === name).id
}

let ctx: Context
let operations: Operations
const tokens = {} as Record<Credential, string | undefined>

beforeAll(async () => {
  const server = await startServer({ config: { adminToken: ADMIN_TOKEN } })
  operations = await loadOperations(server)
  const account = await signUp(server, 'Matrix Ltd')
  ctx = { server, account }
  tokens.Sms = await createKey(server, account, 'Sms', 'sms')
  tokens.Full = await createKey(server, account, 'Full', 'full')
  tokens.Playground = await createKey(server, account, 'Playground', 'playground')
  tokens.session = account.session
  tokens.none = undefined
  tokens.admin = ADMIN_TOKEN
  const revoked = await createKey(server, account, 'Full', 'revoked')
  const list = await operations.request(server, 'listKeys', { token: account.session, query: 'pageSize=100' })
  const id = list.body.items.find((k: { name: string }) => k.name === 'revoked').id
  expect((await operations.request(server, 'revokeKey', { token: account.session, params: { keyId: id } })).status).toBe(204)
  tokens.revoked = revoked
})
afterAll(() => ctx.server.close())

function send(call: Call, credential: Credential): Promise<ApiResponse> {
  const token = tokens[credential]
  return operations.request(ctx.server, call.operationId, {
    ...(call.params ? { params: call.params } : {}),
    ...(token ? { token } : {}),
    ...(call.body === undefined ? {} : { body: call.body }),
  })
}

describe('the scope matrix', () => {
  it('has a row for every operation of the document, and no other', () => {
    expect(operations.list.map((o) => o.operationId).filter((id) => !(id in ACCESS))).toEqual([])
    expect(Object.keys(ACCESS).filter((id) => !operations.has(id))).toEqual([])
    for (const row of EXERCISED) expect(ACCESS, row.operationId).toHaveProperty(row.operationId)
  })

  it('names only Sms, Full, Playground and session in a row that is neither public nor admin', () => {
    for (const operationId of Object.keys(ACCESS)) {
      const access = accessOf(operationId)
      if (access === 'public' || access === 'admin') continue
      expect(access.length, operationId).toBeGreaterThan(0)
      for (const caller of access) expect(CALLERS, operationId).toContain(caller)
    }
  })

  it('agrees with the security each operation declares: public ones declare none, every other one a credential', () => {
    const disagreements: string[] = []
    for (const operation of operations.list) {
      const declared = [...operation.accepts].sort().join(', ') || 'nothing'
      const stated = securityOf(accessOf(operation.operationId)).join(', ') || 'nothing'
      if (declared !== stated) disagreements.push(`${operation.operationId} declares ${declared}, the matrix says ${stated}`)
    }
    expect(disagreements).toEqual([])
    expect(operations.list.filter((o) => o.accepts.length === 0).map((o) => o.operationId).sort()).toEqual(
      Object.keys(ACCESS).filter((id) => accessOf(id) === 'public').sort(),
    )
  })

  // api.md: an Sms key may call the /v1/sms operations and GET /account only (and the
  // totals of those messages, /v1/stats/messages and /errors); Full and Playground keys
  // have the same rights; sessions have Full rights.
  it('follows api.md: an Sms key reaches only /v1/sms, its totals and getAccount, Playground as far as Full, a session wherever a key', () => {
    const messageTotals = ['/v1/stats/messages', '/v1/stats/errors']
    for (const operation of operations.list) {
      const access = accessOf(operation.operationId)
      if (access === 'public' || access === 'admin') continue
      const smsMayCall = operation.path.startsWith('/v1/sms/') || operation.path === '/v1/sms' || messageTotals.includes(operation.path) || operation.operationId === 'getAccount'
      const takesKeys = access.some((caller) => caller !== 'session')
      expect(access.includes('Sms'), operation.operationId).toBe(takesKeys && smsMayCall)
      expect(access.includes('Full'), operation.operationId).toBe(takesKeys)
      expect(access.includes('Playground'), operation.operationId).toBe(takesKeys)
      expect(access, operation.operationId).toContain('session')
    }
  })

  it('takes a session wherever the document says it takes an API key (api.md: sessions have Full rights)', () => {
    for (const operation of operations.list) {
      if (operation.accepts.includes('apiKey')) expect(operation.accepts, operation.operationId).toContain('session')
    }
  })
})

describe.each(EXERCISED)('$operationId', (row) => {
  const statuses = CREDENTIALS.map((credential) => {
    const expected = expectedFor(row.operationId, credential)
    return [credential, expected === 'passes' ? row.succeeds : expected] as const
  })
  it.each(statuses)(
    'with %s credentials answers %i',
    async (credential, status) => {
      const call: Call = { operationId: row.operationId, ...(await row.call?.(ctx)) }
      const before = status >= 400 && row.state ? await row.state(ctx) : undefined
      const response = await send(call, credential)
      if (status >= 400) {
        expectProblem(response, status, status === 401 ? 'unauthorized' : 'forbidden')
        if (status === 401) expect(response.headers.get('www-authenticate')).toBe('Bearer')
        if (row.state) expect(await row.state(ctx)).toEqual(before)
      } else {
        expect(response.status).toBe(status)
      }
    },
  )
})

// Every operation with a credential, before it looks at the request: random ids in the
// path and an empty body, so what answers is the credential check alone.
describe.each(GUARDED)('%s', (operationId) => {
  it('answers each credential as the scope matrix says, before looking at the request', async () => {
    const operation: DocumentedOperation = operations.get(operationId)
    const call: Call = {
      operationId,
      params: Object.fromEntries(operation.pathParams.map((name) => [name, randomUUID()])),
      ...(['POST', 'PUT', 'PATCH'].includes(operation.method) ? { body: {} } : {}),
    }
    const failures: string[] = []
    for (const credential of CREDENTIALS) {
      const expected = expectedFor(operationId, credential)
      const response = await send(call, credential)
      const passedAuth = response.status !== 401 && response.status !== 403
      const ok = expected === 'passes' ? passedAuth : response.status === expected
      if (!ok) failures.push(`with ${credential}: expected ${expected}, got ${response.status}`)
      if (ok && expected !== 'passes') expectProblem(response, expected, expected === 401 ? 'unauthorized' : 'forbidden')
    }
    expect(failures).toEqual([])
  })
})

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
