import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import type { ApiClient } from './harness.js'

export interface TestAccount {
  accountId: string
  email: string
  password: string
  /** A dashboard session JWT. */
  session: string
}

/** Signs up and logs in through the public API. */
export async function signUp(server: ApiClient, name = 'Test'): Promise<TestAccount> {
  const email = `user-${randomBytes(6).toString('hex')}@example.com`
  const password = 'correct horse battery staple'
  const signup = await server.post('/v1/auth/signup', { body: { email, password, accountName: name } })
  expect(signup.status).toBe(201)
  const login = await server.post('/v1/auth/login', { body: { email, password } })
  expect(login.status).toBe(200)
  return { accountId: signup.body.accountId, email, password, session: login.body.token }
}

/** Creates an API key through the public API and returns the raw key. */
export async function createKey(
  server: ApiClient,
  account: TestAccount,
  permission: 'Sms' | 'Full' | 'Playground' = 'Full',
  name = 'test key',
): Promise<string> {
  const response = await server.post('/v1/keys', { token: account.session, body: { name, permission } })
  expect(response.status).toBe(201)
  expect(typeof response.body).toBe('string')
  return response.body as string
}

/** Asserts a whole RFC 9457 body and its content type. */
export function expectProblem(
  response: { status: number; headers: Headers; body: any },
  status: number,
  slug?: string,
): void {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  expect(response.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) })
  expect(response.body.type).toMatch(/^https:\/\/docs\.messaging-platform\.dev\/errors\//)
  if (slug) expect(response.body.type).toBe(`https://docs.messaging-platform.dev/errors/${slug}`)
}

export interface ExpectedProblem {
  status: number
  slug: string
  title: string
  /** Exact text, or a pattern it must match. */
  detail?: string | RegExp
  /** The request path, as the error handler reports it. */
  instance?: string
  /** When given, errors[] must equal it; when absent, the body must have no errors[]. */
  errors?: { field: string; message: string | RegExp | ReturnType<typeof expect.any> }[]
}

/** Asserts the whole RFC 9457 body: only the problem members, with these values. */
export function expectWholeProblem(response: { status: number; headers: Headers; body: any }, expected: ExpectedProblem): void {
  expectProblem(response, expected.status, expected.slug)
  const allowed = ['type', 'title', 'status', 'detail', 'instance', 'errors']
  expect(Object.keys(response.body).filter((member) => !allowed.includes(member))).toEqual([])
  expect(response.body.title).toBe(expected.title)
  if (typeof expected.detail === 'string') expect(response.body.detail).toBe(expected.detail)
  else if (expected.detail) expect(response.body.detail).toMatch(expected.detail)
  if (expected.instance !== undefined) expect(response.body.instance).toBe(expected.instance)
  if (expected.errors === undefined) {
    expect(response.body.errors).toBeUndefined()
  } else {
    expect(response.body.errors).toEqual(
      expected.errors.map((e) => ({
        field: e.field,
        message: e.message instanceof RegExp ? expect.stringMatching(e.message) : e.message,
      })),
    )
  }
}

/** The operator token servers get in tests that top up credits (config adminToken). */
export const TEST_ADMIN_TOKEN = 'admin-token-0123456789'

/** Adds credits through the operator endpoint; the server must run with TEST_ADMIN_TOKEN. */
export async function topUp(server: ApiClient, accountId: string, amount: number): Promise<number> {
  const response = await server.post(`/v1/admin/accounts/${accountId}/credits`, { token: TEST_ADMIN_TOKEN, body: { amount } })
  expect(response.status).toBe(200)
  return response.body.balance as number
}
