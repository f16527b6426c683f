import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { liveOpenApiDocument } from '../../scripts/lint-openapi.js'
import { createKey, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { KeepAliveClient, type PlainResponse } from '../support/keep-alive-http.js'
import { badInputsOf, operationsOf, targetOf, type BadInput, type OpenApiDocument, type Operation, type SweepIds } from '../support/openapi-sweep.js'
import { loadOperations, Operations, type DocumentedOperation, type OperationRequest, type OperationsDocument } from '../support/operations.js'
import { snapshotChanges, snapshotStore, type IgnoredColumns, type StoreSnapshot } from '../support/store-snapshot.js'

// Every operation of the OpenAPI document gets malformed and mistyped bodies, hostile
// strings, bad query values, odd path ids and wrong content types, with and without
// credentials. None may fail with a 5xx, every 4xx must be problem+json, and none may
// change the store: each request is bad in exactly one way, the rest of it valid.

const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const IN_FLIGHT = 8

/** What may change in the store while the sweep runs, and why. */
const IGNORED: IgnoredColumns = {
  api_keys: { last_used_at: 'written (in batches) whenever a key authenticates, and the sweep authenticates with a key on purpose' },
}

/**
 * The operations, one case each, as the server documents them with every optional
 * operation on; the first test checks that the server under test documents the same.
 */
const LISTED: DocumentedOperation[] = new Operations((await liveOpenApiDocument()) as unknown as OperationsDocument).list

/** One of everything a path parameter can name, made through the API for one account. */
interface Furnished {
  accountId: string
  keyId: string
  importId: string
  contactId: string
  listId: string
  segmentId: string
  smsId: string
  broadcastId: string
  webhookId: string
  logId: string
  /** A carrier connection (operators' resources belong to no account: each account's sweep gets one of its own). */
  carrierId: string
}

/**
 * The real ids each operation's path parameters take, per operationId: an id of the
 * caller's own account, so that only the bad part of a request is bad, and one of
 * another account's. Every operation with path parameters needs a row.
 */
const PATH_IDS: Record<string, (ids: Furnished) => Record<string, string>> = {
  addCredits: (ids) => ({ accountId: ids.accountId }),
  revokeKey: (ids) => ({ keyId: ids.keyId }),
  getContactImport: (ids) => ({ id: ids.importId }),
  getContact: (ids) => ({ id: ids.contactId }),
  updateContact: (ids) => ({ id: ids.contactId }),
  deleteContact: (ids) => ({ id: ids.contactId }),
  addContactsToList: (ids) => ({ id: ids.listId }),
  removeContactFromList: (ids) => ({ id: ids.listId, contactId: ids.contactId }),
  deleteContactList: (ids) => ({ id: ids.listId }),
  getSegment: (ids) => ({ id: ids.segmentId }),
  replaceSegment: (ids) => ({ id: ids.segmentId }),
  deleteSegment: (ids) => ({ id: ids.segmentId }),
  previewSegment: (ids) => ({ id: ids.segmentId }),
  getSms: (ids) => ({ id: ids.smsId }),
  getBroadcast: (ids) => ({ id: ids.broadcastId }),
  replaceBroadcast: (ids) => ({ id: ids.broadcastId }),
  deleteBroadcast: (ids) => ({ id: ids.broadcastId }),
  sendBroadcast: (ids) => ({ id: ids.broadcastId }),
  estimateBroadcast: (ids) => ({ id: ids.broadcastId }),
  pauseBroadcast: (ids) => ({ id: ids.broadcastId }),
  resumeBroadcast: (ids) => ({ id: ids.broadcastId }),
  cancelBroadcast: (ids) => ({ id: ids.broadcastId }),
  testSendBroadcast: (ids) => ({ id: ids.broadcastId }),
  getWebhook: (ids) => ({ id: ids.webhookId }),
  deleteWebhook: (ids) => ({ id: ids.webhookId }),
  toggleWebhook: (ids) => ({ id: ids.webhookId }),
  getWebhookSecret: (ids) => ({ id: ids.webhookId }),
  rotateWebhookSecret: (ids) => ({ id: ids.webhookId }),
  listWebhookLogs: (ids) => ({ id: ids.webhookId }),
  retryWebhookDelivery: (ids) => ({ logId: ids.logId }),
  getCarrier: (ids) => ({ id: ids.carrierId }),
  updateCarrier: (ids) => ({ id: ids.carrierId }),
  deleteCarrier: (ids) => ({ id: ids.carrierId }),
  twilioStatusCallback: (ids) => ({ connectionId: ids.carrierId }),
  twilioInboundMessage: (ids) => ({ connectionId: ids.carrierId }),
  // A link code belongs to no caller: a real one redirects whoever follows it (and counts
  // a click), so it is no bad input. Well-formed codes that no recipient holds stand in
  // (the 14 hex characters of the account's SMS id, and link 0).
  followLink: (ids) => ({ code: `${ids.smsId.replaceAll('-', '').slice(-14)}0` }),
}

let server: TestServer
let client: KeepAliveClient
let operations: Operations
let alice: TestAccount & { key: string }
let bob: TestAccount

function call(account: TestAccount, operationId: string, request: OperationRequest = {}) {
  return operations.request(server, operationId, { token: account.session, ...request })
}

/** Through the API, so that both accounts hold one of everything the path ids can name. */
async function furnish(account: TestAccount, tag: string): Promise<Furnished> {
  const contact = await call(account, 'createContact', { body: { phoneNumber: `+1415555${tag}`, firstName: 'Sweep' } })
  expect(contact.status).toBe(201)
  const list = await call(account, 'createContactList', { body: { name: `list ${tag}` } })
  expect(list.status).toBe(201)
  expect((await call(account, 'addContactsToList', { params: { id: list.body }, body: { contactIds: [contact.body.id] } })).status).toBeLessThan(300)
  const segment = await call(account, 'createSegment', { body: { name: `segment ${tag}`, rules: '[]' } })
  expect(segment.status).toBe(201)
  const upload = await call(account, 'importContacts', { rawBody: `phoneNumber\n+1415556${tag}\n`, contentType: 'text/csv' })
  expect(upload.status).toBe(202)
  // Polled by hand: expect.poll works inside a test only, and this runs before them.
  for (let waited = 0; (await call(account, 'getContactImport', { params: { id: upload.body.importId } })).body.status !== 'completed'; waited += 50) {
    if (waited >= 10_000) throw new Error(`import ${upload.body.importId} did not complete within 10 s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const keys = await call(account, 'listKeys')
  expect(keys.body.items.length).toBeGreaterThan(0)
  expect((await operations.request(server, 'addCredits', { token: ADMIN_TOKEN, params: { accountId: account.accountId }, body: { amount: 10 } })).status).toBe(200)
  const sms = await call(account, 'sendSms', { body: { recipients: [`+1415555${tag}`], content: 'Sweep', senderId: 'Sweep' } })
  expect(sms.status).toBe(201)
  const broadcast = await call(account, 'createBroadcast', { body: { name: `broadcast ${tag}`, message: 'Sweep', senderId: 'Sweep', contactListId: list.body } })
  expect(broadcast.status).toBe(201)
  // An event nothing in the sweep emits, and a port nothing listens on: the webhook is never
  // delivered to, and its test delivery fails at once, leaving a log entry to retry.
  const webhook = await call(account, 'createWebhook', { body: { endpoint: 'https://127.0.0.1:1/sweep', eventType: 'CampaignDeleted' } })
  expect(webhook.status).toBe(201)
  const log = await call(account, 'testWebhook', { body: { webhookId: webhook.body, payload: '{}' } })
  expect(log.status).toBe(200)
  const carrier = await operations.request(server, 'createCarrier', { token: ADMIN_TOKEN, body: { name: `sweep-${tag}`, type: 'simulator' } })
  expect(carrier.status).toBe(201)
  return {
    accountId: account.accountId,
    keyId: keys.body.items[0].id,
    importId: upload.body.importId,
    contactId: contact.body.id,
    listId: list.body,
    segmentId: segment.body,
    smsId: sms.body.messageId,
    broadcastId: broadcast.body,
    webhookId: webhook.body,
    logId: log.body.id,
    carrierId: carrier.body,
  }
}

interface Credential {
  label: string
  authorization: string | undefined
}

function credentialsFor(operation: Operation): Credential[] {
  const credentials: Credential[] = [
    { label: 'no token', authorization: undefined },
    { label: 'a garbage token', authorization: 'Bearer garbage' },
    { label: 'a Full API key', authorization: `Bearer ${alice.key}` },
    { label: 'a session', authorization: `Bearer ${alice.session}` },
  ]
  if (operation.accepts.includes('admin')) credentials.push({ label: 'the admin token', authorization: `Bearer ${ADMIN_TOKEN}` })
  return credentials
}

/** Why a response breaks the contract, or undefined when it keeps it. */
function breach(response: PlainResponse): string | undefined {
  if (response.status >= 500) return `a ${response.status}`
  if (response.status < 200 || (response.status >= 300 && response.status < 400)) return `an unexpected ${response.status}`
  if (response.status < 400) return undefined
  if (!response.contentType.startsWith('application/problem+json')) return `a ${response.status} as ${response.contentType || 'no content type'}`
  let status: unknown
  try {
    status = (JSON.parse(response.text) as { status?: unknown }).status
  } catch {
    return `a ${response.status} whose body is not JSON`
  }
  return status === response.status ? undefined : `a ${response.status} whose body says status ${JSON.stringify(status)}`
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]!)
  }))
}

/**
 * The store once background work (event relay, segment counts, key usage, message
 * dispatch) has finished: two snapshots in a row, 200 ms apart, agree. Before the sweep,
 * so that only the sweep could change it; after, so that work a request started in the
 * background shows too.
 */
async function settledSnapshot(): Promise<StoreSnapshot> {
  let previous = await snapshotStore(server.app.platform.store.db, IGNORED)
  for (let attempt = 0; attempt < 25; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    await server.app.platform.relay.drain()
    // The webhook stats follow the attempt log a second or so behind: counted now, not during the sweep.
    await server.app.platform.webhooks.rollUpStats()
    const current = await snapshotStore(server.app.platform.store.db, IGNORED)
    if (snapshotChanges(previous, current).length === 0) return current
    previous = current
  }
  throw new Error('the store did not settle within 5 s')
}

interface Send {
  input: BadInput
  credential: Credential
}

/** The document's operations as the sweep reads them (parameters, body, security), by operationId. */
const swept = new Map<string, Operation>()
/** The bad requests of each operation, by operationId. */
const sends = new Map<string, Send[]>()
let own: Furnished
let other: Furnished
let before: StoreSnapshot

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN, rateLimitPerSecond: 1_000_000, loginAttemptsPerMinute: 1_000_000 } })
  client = new KeepAliveClient(server.url, IN_FLIGHT)
  operations = await loadOperations(server)
  const a = await signUp(server, 'Alice Ltd')
  alice = { ...a, key: await createKey(server, a, 'Full') }
  bob = await signUp(server, 'Bob Ltd')
  await createKey(server, bob, 'Full')
  own = await furnish(alice, '0100')
  other = await furnish(bob, '0200')

  const byRoute = new Map(operationsOf(operations.document as OpenApiDocument).map((operation) => [`${operation.method} ${operation.path}`, operation]))
  for (const documented of operations.list) {
    const operation = byRoute.get(documented.route)!
    swept.set(documented.operationId, operation)
    // Without a row, a path parameter carries a random UUID (a test below names the operation).
    const resolve = PATH_IDS[documented.operationId]
    const ids: SweepIds = { own: resolve?.(own) ?? {}, other: resolve?.(other) ?? {} }
    const inputs = badInputsOf(operation, ids)
    // An operation without parameters or body (a health check) still meets every credential.
    if (inputs.length === 0 && operation.method === 'GET') inputs.push({ label: 'no input', params: {}, query: '', body: undefined })
    const list: Send[] = []
    for (const credential of credentialsFor(operation)) {
      for (const input of inputs) {
        // An operator acts on any account by design: another account's id is no bad input for the admin token.
        if (input.foreignId && credential.authorization === `Bearer ${ADMIN_TOKEN}`) continue
        list.push({ input, credential })
      }
    }
    sends.set(documented.operationId, list)
  }
  before = await settledSnapshot()
}, 120_000)
afterAll(async () => {
  client?.close()
  await server?.close()
})

describe('a sweep of bad input over every documented operation', () => {
  it('covers every operation the server under test documents, with an event stream only at streamPushEvents', () => {
    expect(LISTED.length).toBeGreaterThan(20)
    expect(operations.list.map((o) => `${o.operationId} ${o.route}`)).toEqual(LISTED.map((o) => `${o.operationId} ${o.route}`))
    // A stream's credential is a token in its query, which the sweep never holds (a valid
    // one would open a stream that does not end; the push tests cover those).
    expect(operations.list.filter((o) => swept.get(o.operationId)!.eventStream).map((o) => o.operationId)).toEqual(['streamPushEvents'])
  })

  it('has real ids of both accounts for every path parameter, per operationId', () => {
    const missing: string[] = []
    for (const operation of operations.list) {
      const resolve = PATH_IDS[operation.operationId]
      if (operation.pathParams.length === 0) {
        if (resolve) missing.push(`${operation.operationId} has no path parameters, yet a row`)
        continue
      }
      if (!resolve) {
        missing.push(`${operation.operationId} has no row`)
        continue
      }
      for (const ids of [resolve(own), resolve(other)]) {
        const given = Object.entries(ids).filter(([, id]) => typeof id === 'string' && id !== '').map(([name]) => name)
        if (given.sort().join() !== [...operation.pathParams].sort().join()) missing.push(`${operation.operationId} takes ${operation.pathParams.join(', ')}, its row gives ${given.join(', ')}`)
      }
    }
    expect(missing).toEqual([])
    expect(Object.keys(PATH_IDS).filter((operationId) => !operations.has(operationId))).toEqual([])
  })

  describe.each(LISTED)('$operationId', ({ operationId }) => {
    it('answers no bad input with a 5xx and every 4xx as problem+json, and judges the bad part past authentication', async () => {
      expect(swept.has(operationId), `${operationId} is not in the document the server under test serves`).toBe(true)
      const operation = swept.get(operationId)!
      const breaches: string[] = []
      const statuses = new Set<number>()
      let pastAuth = false
      await inParallel(sends.get(operationId)!, IN_FLIGHT, async ({ input, credential }) => {
        const headers: Record<string, string> = {}
        if (credential.authorization) headers.authorization = credential.authorization
        if (input.body?.contentType) headers['content-type'] = input.body.contentType
        const what = `${operationId} (${operation.method} ${operation.path}) with ${input.label} and ${credential.label}`
        try {
          const response = await client.send({ method: operation.method, target: targetOf(operation, input.params, input.query), headers, body: input.body?.text })
          const problem = breach(response)
          if (problem) breaches.push(`${what}: ${problem} ${response.text.slice(0, 200)}`)
          if (credential.authorization !== undefined && response.status !== 401 && response.status !== 403) pastAuth = true
          statuses.add(response.status)
        } catch (err) {
          breaches.push(`${what}: no answer (${(err as Error).message})`)
        }
      })
      expect(breaches).toEqual([])
      if (operation.eventStream) {
        // Whatever else is wrong with the request, it is refused with 401 before a stream opens.
        expect([...statuses]).toEqual([401])
      } else {
        // At least one request got past authentication: the bad parts were judged, not only the credentials.
        expect(pastAuth).toBe(true)
      }
    })
  })

  it('changes nothing in the store, over more than 1000 bad requests', async () => {
    const after = await settledSnapshot()
    expect(snapshotChanges(before, after)).toEqual([])
    expect([...sends.values()].reduce((total, list) => total + list.length, 0)).toBeGreaterThan(1000)
  })
})
