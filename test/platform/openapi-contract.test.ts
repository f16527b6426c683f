// The OpenAPI contract every ApiClient request is checked against (test/support/openapi-contract.ts):
// a real server answers through a proxy that can spoil one response, and the request
// that receives the spoiled response must fail, naming the operation.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { signUp, type TestAccount } from '../support/fixtures.js'
import { ApiClient, startServer, type TestServer } from '../support/harness.js'
import { ContractViolation, fetchContract } from '../support/openapi-contract.js'

interface Answer {
  status: number
  headers: Record<string, string>
  text: string
}

/** How the proxy changes the next answer to a request; undefined passes it on as it is. */
let spoil: ((request: IncomingMessage, answer: Answer) => Answer) | undefined

let server: TestServer
let proxy: Server
let client: ApiClient
let alice: TestAccount

// Headers about the proxy's own connection and framing: it writes them itself.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length'])

beforeAll(async () => {
  // With an operator token, so that the document has every operation (the simulator is the test carrier).
  server = await startServer({ config: { adminToken: 'contract-admin-token-0123456789abcdef' } })
  proxy = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string' && !HOP_BY_HOP.has(name) && name !== 'host') headers[name] = value
    const upstream = await fetch(server.url + request.url, { method: request.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) })
    let answer: Answer = { status: upstream.status, headers: {}, text: await upstream.text() }
    upstream.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) answer.headers[name] = value
    })
    // The document passes untouched: the contract is the server's own.
    if (spoil !== undefined && request.url !== '/v1/openapi.json') answer = spoil(request, answer)
    response.writeHead(answer.status, answer.headers).end(answer.text)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  client = new ApiClient(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`)
  alice = await signUp(server, 'Alice Ltd')
})

afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve))
  await server.close()
})

beforeEach(() => {
  spoil = undefined
})

/** The violation a request fails with. */
async function violation(request: Promise<unknown>): Promise<ContractViolation> {
  const error = await request.then(() => undefined, (err: unknown) => err)
  expect(error).toBeInstanceOf(ContractViolation)
  return error as ContractViolation
}

describe('the OpenAPI contract of ApiClient', () => {
  it('compiles every response schema of the document under ajv strict mode', async () => {
    const contract = await fetchContract(server.url)
    expect(contract.operationNames()).toEqual(expect.arrayContaining(['addCredits POST /v1/admin/accounts/{accountId}/credits', 'simulateInboundSms POST /v1/sms/inbound']))
    expect(() => contract.compileAll()).not.toThrow()
  })

  it('passes a response the document describes', async () => {
    const response = await client.get('/v1/account', { token: alice.session })
    expect(response.status).toBe(200)
    expect(response.body.id).toBe(alice.accountId)
  })

  it('fails a status the operation does not document, naming the operation', async () => {
    spoil = (_request, answer) => ({ ...answer, status: 409 })
    const error = await violation(client.get('/v1/account', { token: alice.session }))
    expect(error.message).toContain('getAccount GET /v1/account')
    expect(error.message).toContain('answered 409, a status the operation does not document')
  })

  it('fails a content type other than the documented one', async () => {
    spoil = (_request, answer) => ({ ...answer, headers: { ...answer.headers, 'content-type': 'text/plain; charset=utf-8' } })
    const error = await violation(client.get('/v1/account', { token: alice.session }))
    expect(error.message).toContain('getAccount GET /v1/account')
    expect(error.message).toContain('answered 200 as text/plain, where the document says application/json')
  })

  it('fails an error that is not problem+json', async () => {
    spoil = (_request, answer) => ({ ...answer, headers: { ...answer.headers, 'content-type': 'application/json; charset=utf-8' } })
    const error = await violation(client.get('/v1/account'))
    expect(error.message).toContain('getAccount GET /v1/account')
    expect(error.message).toContain('answered 401 as application/json, where the document says application/problem+json')
  })

  it('fails a body the response schema refuses, with the first schema error', async () => {
    spoil = (_request, answer) => ({ ...answer, text: JSON.stringify({ ...JSON.parse(answer.text), balance: 'plenty' }) })
    const error = await violation(client.get('/v1/account', { token: alice.session }))
    expect(error.message).toContain('getAccount GET /v1/account')
    expect(error.message).toMatch(/answered 200 with a body the schema refuses: \/balance must be integer/)
  })

  it('fails a problem whose body is not a problem', async () => {
    spoil = (_request, answer) => ({ ...answer, text: JSON.stringify({ error: 'Not Found' }) })
    const error = await violation(client.get('/v1/contacts/0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', { token: alice.session }))
    expect(error.message).toContain('getContact GET /v1/contacts/{id}')
    expect(error.message).toMatch(/answered 404 with a body the schema refuses: \(the whole body\) must have required property 'type'/)
  })

  it('fails a Location header the response does not document', async () => {
    spoil = (_request, answer) => ({ ...answer, headers: { ...answer.headers, location: '/v1/account' } })
    const error = await violation(client.patch('/v1/account', { token: alice.session, body: { lowBalanceThreshold: 5 } }))
    expect(error.message).toContain('updateAccount PATCH /v1/account')
    expect(error.message).toContain('answered 200 with a Location header its response does not document')
  })

  it('fails a success on an API path the document does not have', async () => {
    spoil = (_request, answer) => ({ status: 200, headers: { 'content-type': 'application/json' }, text: '{}' })
    const error = await violation(client.get('/v1/nothing-here'))
    expect(error.message).toContain('GET /v1/nothing-here, which is no operation of the document, answered 200')
  })

  it('checks an unknown path and a method a path does not take as problems, outside any operation', async () => {
    expect((await client.get('/v1/nothing-here')).status).toBe(404)
    expect((await client.put('/v1/account', { token: alice.session, body: {} })).status).toBe(405)
    spoil = (_request, answer) => ({ ...answer, headers: { ...answer.headers, 'content-type': 'text/html' } })
    const error = await violation(client.get('/v1/nothing-here'))
    expect(error.message).toContain('GET /v1/nothing-here, which is no operation of the document, answered 404 as text/html, not application/problem+json')
  })
})
