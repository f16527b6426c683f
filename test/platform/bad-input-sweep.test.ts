import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { KeepAliveClient, type PlainResponse } from '../support/keep-alive-http.js'
import { badInputsOf, operationsOf, targetOf, type BadInput, type OpenApiDocument, type Operation, type SweepIds } from '../support/openapi-sweep.js'
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

let server: TestServer
let client: KeepAliveClient
let alice: TestAccount & { key: string }
let bob: TestAccount

/** Ids of collections the document lists no GET for, by the path before the id. */
const knownIds: Record<string, { own: string; other: string }> = {}

/** Through the API, so both accounts hold one of everything the path ids can name. */
async function furnish(account: TestAccount, tag: string): Promise<string> {
  const contact = await server.post('/v1/contacts/single', { token: account.session, body: { phoneNumber: `+1415555${tag}`, firstName: 'Sweep' } })
  expect(contact.status).toBe(201)
  const list = await server.post('/v1/contact-lists', { token: account.session, body: { name: `list ${tag}` } })
  expect(list.status).toBe(201)
  expect((await server.post(`/v1/contact-lists/${list.body}/contacts`, { token: account.session, body: { contactIds: [contact.body.id] } })).status).toBeLessThan(300)
  const segment = await server.post('/v1/audience/segments', { token: account.session, body: { name: `segment ${tag}`, rules: '[]' } })
  expect(segment.status).toBe(201)
  const upload = await server.post('/v1/contacts/import', { token: account.session, rawBody: `phoneNumber\n+1415556${tag}\n`, contentType: 'text/csv' })
  expect(upload.status).toBe(202)
  await expect
    .poll(async () => (await server.get(`/v1/contacts/imports/${upload.body.importId}`, { token: account.session })).body.status, { timeout: 10_000 })
    .toBe('completed')
  return upload.body.importId
}

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN, rateLimitPerSecond: 1_000_000, loginAttemptsPerMinute: 1_000_000 } })
  client = new KeepAliveClient(server.url, IN_FLIGHT)
  const a = await signUp(server, 'Alice Ltd')
  alice = { ...a, key: await createKey(server, a, 'Full') }
  bob = await signUp(server, 'Bob Ltd')
  await createKey(server, bob, 'Full')
})
afterAll(async () => {
  client?.close()
  await server?.close()
})

/**
 * A real id for each path parameter: the first item of the collection before it (or of
 * the collection named by the last word before it), else a known id, else none (the
 * request then carries a random UUID there, and only the odd ids test that parameter).
 */
async function idsFor(operation: Operation, document: OpenApiDocument): Promise<SweepIds> {
  const ids: SweepIds = { own: {}, other: {} }
  const segments = operation.path.split('/')
  for (const name of operation.pathParams) {
    const at = segments.indexOf(`{${name}}`)
    const prefix = segments.slice(0, at).join('/')
    const candidates = [prefix, `/v1/${segments[at - 1]}`].filter((path) => document.paths[path]?.get !== undefined)
    for (const [side, account] of [['own', alice], ['other', bob]] as const) {
      let id: string | undefined
      for (const path of candidates) {
        if (id !== undefined) break
        const list = await server.get(path.replace(/\{([^}]+)\}/g, (_, param: string) => ids[side][param] ?? ''), { token: account.session })
        id = list.body?.items?.[0]?.id
      }
      id ??= knownIds[prefix]?.[side]
      if (id !== undefined) ids[side][name] = id
    }
  }
  return ids
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
 * The store once background work (event relay, segment counts, key usage) has finished:
 * two snapshots in a row, 200 ms apart, agree. Before the sweep, so that only the sweep
 * could change it; after, so that work a request started in the background shows too.
 */
async function settledSnapshot(): Promise<StoreSnapshot> {
  let previous = await snapshotStore(server.app.platform.store.db, IGNORED)
  for (let attempt = 0; attempt < 25; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    await server.app.platform.relay.drain()
    const current = await snapshotStore(server.app.platform.store.db, IGNORED)
    if (snapshotChanges(previous, current).length === 0) return current
    previous = current
  }
  throw new Error('the store did not settle within 5 s')
}

describe('a sweep of bad input over every documented operation', () => {
  it('answers none with a 5xx, every 4xx as problem+json, and changes nothing in the store', async () => {
    knownIds['/v1/contacts/imports'] = { own: await furnish(alice, '0100'), other: await furnish(bob, '0200') }
    knownIds['/v1/admin/accounts'] = { own: alice.accountId, other: bob.accountId }
    const document = (await server.get('/v1/openapi.json')).body as OpenApiDocument
    const operations = operationsOf(document)
    expect(operations.length).toBeGreaterThan(20)

    const sends: { operation: Operation; input: BadInput; credential: Credential }[] = []
    for (const operation of operations) {
      const inputs = badInputsOf(operation, await idsFor(operation, document))
      // An operation without parameters or body (a health check) still meets every credential.
      if (inputs.length === 0 && operation.method === 'GET') inputs.push({ label: 'no input', params: {}, query: '', body: undefined })
      for (const credential of credentialsFor(operation)) {
        for (const input of inputs) {
          // An operator acts on any account by design: another account's id is no bad input for the admin token.
          if (input.foreignId && credential.authorization === `Bearer ${ADMIN_TOKEN}`) continue
          sends.push({ operation, input, credential })
        }
      }
    }

    const before = await settledSnapshot()
    const breaches: string[] = []
    const pastAuth = new Set<Operation>()
    const streamStatuses = new Set<number>()
    await inParallel(sends, IN_FLIGHT, async ({ operation, input, credential }) => {
      const headers: Record<string, string> = {}
      if (credential.authorization) headers.authorization = credential.authorization
      if (input.body?.contentType) headers['content-type'] = input.body.contentType
      const what = `${operation.method} ${operation.path} with ${input.label} and ${credential.label}`
      try {
        const response = await client.send({ method: operation.method, target: targetOf(operation, input.params, input.query), headers, body: input.body?.text })
        const problem = breach(response)
        if (problem) breaches.push(`${what}: ${problem} ${response.text.slice(0, 200)}`)
        if (credential.authorization !== undefined && response.status !== 401 && response.status !== 403) pastAuth.add(operation)
        if (operation.eventStream) streamStatuses.add(response.status)
      } catch (err) {
        breaches.push(`${what}: no answer (${(err as Error).message})`)
      }
    })
    const after = await settledSnapshot()

    expect(breaches).toEqual([])
    expect(snapshotChanges(before, after)).toEqual([])
    // Each operation was reached past authentication by at least one request: the bad parts were judged, not only the credentials.
    expect(operations.filter((operation) => !operation.eventStream && !pastAuth.has(operation)).map((o) => `${o.method} ${o.path}`)).toEqual([])
    // Except a stream: its credential is a token in its query, which the sweep never holds
    // (a valid one would open a stream that does not end; the push tests cover those).
    // Whatever else is wrong with the request, it is refused with 401 before a stream opens.
    expect(operations.filter((operation) => operation.eventStream).map((o) => `${o.method} ${o.path}`)).toEqual(['GET /v1/push/stream'])
    expect([...streamStatuses]).toEqual([401])
    expect(sends.length).toBeGreaterThan(1000)
  }, 180_000)
})
