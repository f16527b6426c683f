import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { freshDatabase } from '../../../test/support/store.js'

const ADMIN_TOKEN = 'admin-token-0123456789'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const PASSWORD = 'correct horse battery staple'

let server: TestServer
let alice: TestAccount
let bob: TestAccount

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
  bob = await signUp(server, 'Bob Ltd')
})
afterAll(() => server.close())

function newEmail(): string {
  return `user-${randomBytes(6).toString('hex')}@example.com`
}

async function accountOf(account: TestAccount, on: TestServer = server) {
  const response = await on.get('/v1/account', { token: account.session })
  expect(response.status).toBe(200)
  return response.body
}

describe('POST /v1/auth/signup', () => {
  it('answers 201 with the new account and user ids, and the new user can log in', async () => {
    const email = newEmail()
    const response = await server.post('/v1/auth/signup', { body: { email, password: PASSWORD, accountName: 'Acme' } })
    expect(response.status).toBe(201)
    expect(Object.keys(response.body).sort()).toEqual(['accountId', 'userId'])
    expect(response.body.accountId).toMatch(UUID)
    expect(response.body.userId).toMatch(UUID)
    expect(response.body.accountId).not.toBe(response.body.userId)

    const login = await server.post('/v1/auth/login', { body: { email, password: PASSWORD } })
    expect(login.status).toBe(200)
    const account = await server.get('/v1/account', { token: login.body.token })
    expect(account.body).toMatchObject({ id: response.body.accountId, name: 'Acme', balance: 0, inboundNumbers: [] })
  })

  it('names the account after the email when no account name is given', async () => {
    const email = newEmail()
    expect((await server.post('/v1/auth/signup', { body: { email, password: PASSWORD } })).status).toBe(201)
    const login = await server.post('/v1/auth/login', { body: { email, password: PASSWORD } })
    expect((await server.get('/v1/account', { token: login.body.token })).body.name).toBe(email)
  })

  it('refuses an email already taken with 409, in any letter case, and keeps the first password', async () => {
    const email = newEmail()
    expect((await server.post('/v1/auth/signup', { body: { email, password: PASSWORD } })).status).toBe(201)
    for (const again of [email, email.toUpperCase(), email.replace('user', 'User')]) {
      const response = await server.post('/v1/auth/signup', { body: { email: again, password: 'another password entirely' } })
      expectWholeProblem(response, {
        status: 409,
        slug: 'conflict',
        title: 'Conflict',
        detail: 'An account with this email already exists',
        instance: '/v1/auth/signup',
      })
    }
    expect((await server.post('/v1/auth/login', { body: { email, password: PASSWORD } })).status).toBe(200)
    expectProblem(await server.post('/v1/auth/login', { body: { email, password: 'another password entirely' } }), 401, 'unauthorized')
  })

  it('refuses a short password and a malformed email with 422 naming both fields', async () => {
    const response = await server.post('/v1/auth/signup', { body: { email: 'not-an-email', password: 'short' } })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['email', 'password'])
    for (const error of response.body.errors) expect(error.message).toEqual(expect.any(String))
  })

  it('refuses a password of 9 characters and takes one of 10', async () => {
    const short = await server.post('/v1/auth/signup', { body: { email: newEmail(), password: '123456789' } })
    expectProblem(short, 422, 'validation')
    expect(short.body.errors.map((e: any) => e.field)).toEqual(['password'])
    expect((await server.post('/v1/auth/signup', { body: { email: newEmail(), password: '1234567890' } })).status).toBe(201)
  })

  it('refuses a body without email or password with 422 naming the missing fields', async () => {
    const response = await server.post('/v1/auth/signup', { body: {} })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['email', 'password'])
  })

  it('answers 403 when sign-up is disabled, and creates nothing', async () => {
    const closed = await startServer({ config: { allowSignup: false } })
    try {
      const email = newEmail()
      const response = await closed.post('/v1/auth/signup', { body: { email, password: PASSWORD } })
      expectWholeProblem(response, {
        status: 403,
        slug: 'forbidden',
        title: 'Forbidden',
        detail: 'Sign-up is disabled on this platform',
        instance: '/v1/auth/signup',
      })
      expectProblem(await closed.post('/v1/auth/login', { body: { email, password: PASSWORD } }), 401, 'unauthorized')
    } finally {
      await closed.close()
    }
  })
})

describe('POST /v1/auth/login', () => {
  it('answers 200 with a session token that expires about 12 hours from now', async () => {
    const before = Date.now()
    const response = await server.post('/v1/auth/login', { body: { email: alice.email, password: alice.password } })
    expect(response.status).toBe(200)
    expect(Object.keys(response.body).sort()).toEqual(['expiresAt', 'token'])
    expect(response.body.token.split('.')).toHaveLength(3)
    expect(response.body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const twelveHours = 12 * 60 * 60 * 1000
    const expiresAt = Date.parse(response.body.expiresAt)
    expect(expiresAt).toBeGreaterThanOrEqual(before + twelveHours - 2000)
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + twelveHours + 1000)
    expect((await server.get('/v1/account', { token: response.body.token })).body.id).toBe(alice.accountId)
  })

  it('takes the email in any letter case and with surrounding spaces', async () => {
    const response = await server.post('/v1/auth/login', { body: { email: ` ${alice.email.toUpperCase()} `, password: alice.password } })
    expect(response.status).toBe(200)
  })

  it('answers 401 with the same body for an unknown email and for a wrong password', async () => {
    const unknown = await server.post('/v1/auth/login', { body: { email: newEmail(), password: PASSWORD } })
    const wrong = await server.post('/v1/auth/login', { body: { email: alice.email, password: 'not the password' } })
    expectWholeProblem(unknown, {
      status: 401,
      slug: 'unauthorized',
      title: 'Unauthorized',
      detail: 'Invalid email or password',
      instance: '/v1/auth/login',
    })
    expect(wrong.status).toBe(unknown.status)
    expect(wrong.text).toBe(unknown.text)
    expect(wrong.headers.get('content-type')).toBe(unknown.headers.get('content-type'))
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer')
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('makes a password hash again at the configured cost at its next login, and the password still works after', async () => {
    const database = await freshDatabase()
    let before: TestServer | undefined = await startServer({ database, config: { passwordHashCost: 10 } })
    let after: TestServer | undefined
    try {
      const carol = await signUp(before)
      const hashOf = async (on: TestServer) =>
        (await on.app.platform.store.db.selectFrom('users').select('password_hash').where('email', '=', carol.email).executeTakeFirstOrThrow()).password_hash
      expect(await hashOf(before)).toMatch(/^scrypt\$1024\$/)
      await before.close()
      before = undefined
      after = await startServer({ database, config: { passwordHashCost: 11 } })
      expect((await after.post('/v1/auth/login', { body: { email: carol.email, password: 'not the password' } })).status).toBe(401)
      expect(await hashOf(after)).toMatch(/^scrypt\$1024\$/)
      expect((await after.post('/v1/auth/login', { body: { email: carol.email, password: carol.password } })).status).toBe(200)
      const rehashed = await hashOf(after)
      expect(rehashed).toMatch(/^scrypt\$2048\$/)
      expect((await after.post('/v1/auth/login', { body: { email: carol.email, password: carol.password } })).status).toBe(200)
      expect(await hashOf(after)).toBe(rehashed)
    } finally {
      await before?.close()
      await after?.close()
    }
  })

  it('refuses an empty email or password with 422', async () => {
    const response = await server.post('/v1/auth/login', { body: { email: '', password: '' } })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['email', 'password'])
  })

  it('limits attempts per email: past the limit even the right password gets 429 with Retry-After', async () => {
    const limited = await startServer({ config: { loginAttemptsPerMinute: 3 } })
    try {
      const target = await signUpOnly(limited)
      const other = await signUpOnly(limited)
      for (let i = 0; i < 3; i++) {
        expectProblem(await limited.post('/v1/auth/login', { body: { email: target.email, password: 'wrong password' } }), 401)
      }
      // The limit counts the email whatever its case, so varying it does not help.
      const refused = await limited.post('/v1/auth/login', { body: { email: target.email.toUpperCase(), password: PASSWORD } })
      expectWholeProblem(refused, {
        status: 429,
        slug: 'rate-limited',
        title: 'Too many requests',
        instance: '/v1/auth/login',
      })
      const retryAfter = Number(refused.headers.get('retry-after'))
      expect(Number.isInteger(retryAfter)).toBe(true)
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(refused.body.token).toBeUndefined()

      // Another email from the same address is not held back by the first one's limit.
      expect((await limited.post('/v1/auth/login', { body: { email: other.email, password: PASSWORD } })).status).toBe(200)
    } finally {
      await limited.close()
    }
  })
})

async function signUpOnly(on: TestServer): Promise<{ email: string }> {
  const email = newEmail()
  expect((await on.post('/v1/auth/signup', { body: { email, password: PASSWORD } })).status).toBe(201)
  return { email }
}

describe('GET /v1/account', () => {
  it('answers a session with the whole account record', async () => {
    const response = await server.get('/v1/account', { token: alice.session })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      id: alice.accountId,
      name: 'Alice Ltd',
      balance: 0,
      lowBalanceThreshold: 100,
      inboundNumbers: [],
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    })
  })

  it.each(['Sms', 'Full', 'Playground'] as const)('answers an API key with %s permission with its own account', async (permission) => {
    const key = await createKey(server, bob, permission)
    const response = await server.get('/v1/account', { token: key })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ id: bob.accountId, name: 'Bob Ltd' })
  })
})

describe('PATCH /v1/account', () => {
  it('refuses an API key with 403, even a Full one, and changes nothing', async () => {
    const account = await signUp(server, 'Unchanged')
    const key = await createKey(server, account, 'Full')
    const response = await server.patch('/v1/account', { token: key, body: { name: 'Hijacked', lowBalanceThreshold: 1 } })
    expectWholeProblem(response, {
      status: 403,
      slug: 'forbidden',
      title: 'Forbidden',
      detail: 'This endpoint takes a dashboard session, not an API key',
      instance: '/v1/account',
    })
    expect(await accountOf(account)).toMatchObject({ name: 'Unchanged', lowBalanceThreshold: 100 })
  })

  it('changes the name and the low-balance threshold and answers the whole account', async () => {
    const account = await signUp(server, 'Before')
    const response = await server.patch('/v1/account', { token: account.session, body: { name: '  After  ', lowBalanceThreshold: 5 } })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      id: account.accountId,
      name: 'After',
      balance: 0,
      lowBalanceThreshold: 5,
      inboundNumbers: [],
      createdAt: expect.any(String),
    })
    expect(await accountOf(account)).toEqual(response.body)
  })

  it('leaves fields that are not sent as they were', async () => {
    const account = await signUp(server, 'Keep me')
    const response = await server.patch('/v1/account', { token: account.session, body: { lowBalanceThreshold: 0 } })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ name: 'Keep me', lowBalanceThreshold: 0 })
  })

  it('stores inbound numbers in E.164, once each, and replaces the whole list on each change', async () => {
    const account = await signUp(server)
    const response = await server.patch('/v1/account', {
      token: account.session,
      body: { inboundNumbers: ['+1 (415) 555-2671', '00233 20 123 4567', '+233201234567'] },
    })
    expect(response.status).toBe(200)
    expect(response.body.inboundNumbers).toEqual(['+14155552671', '+233201234567'])
    expect((await accountOf(account)).inboundNumbers).toEqual(['+14155552671', '+233201234567'])

    const replaced = await server.patch('/v1/account', { token: account.session, body: { inboundNumbers: ['+44 20 7946 0958'] } })
    expect(replaced.body.inboundNumbers).toEqual(['+442079460958'])
    const cleared = await server.patch('/v1/account', { token: account.session, body: { inboundNumbers: [] } })
    expect(cleared.body.inboundNumbers).toEqual([])
  })

  it('refuses invalid inbound numbers with 422 naming each by index, and changes nothing', async () => {
    const account = await signUp(server, 'Numbers')
    await server.patch('/v1/account', { token: account.session, body: { inboundNumbers: ['+33612345678'] } })
    const response = await server.patch('/v1/account', {
      token: account.session,
      body: { name: 'Renamed', inboundNumbers: ['+4915123456789', 'not a number', '+1', '4155552671'] },
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field)).toEqual(['inboundNumbers[1]', 'inboundNumbers[2]', 'inboundNumbers[3]'])
    expect(await accountOf(account)).toMatchObject({ name: 'Numbers', inboundNumbers: ['+33612345678'] })
  })

  it('refuses a number another account holds with 409 and changes nothing on either account', async () => {
    const holder = await signUp(server, 'Holder')
    const claimant = await signUp(server, 'Claimant')
    expect((await server.patch('/v1/account', { token: holder.session, body: { inboundNumbers: ['+233244123456'] } })).status).toBe(200)
    expect((await server.patch('/v1/account', { token: claimant.session, body: { inboundNumbers: ['+14155550123'] } })).status).toBe(200)

    const response = await server.patch('/v1/account', {
      token: claimant.session,
      body: { name: 'Claimed', lowBalanceThreshold: 7, inboundNumbers: ['+233 24 412 3456', '+4915123456780'] },
    })
    expectProblem(response, 409, 'conflict')
    expect(response.body.detail).toContain('+233244123456')
    expect(await accountOf(claimant)).toMatchObject({ name: 'Claimant', lowBalanceThreshold: 100, inboundNumbers: ['+14155550123'] })
    expect(await accountOf(holder)).toMatchObject({ name: 'Holder', inboundNumbers: ['+233244123456'] })
  })

  it('refuses unknown properties and wrong types with 422 naming each', async () => {
    const response = await server.patch('/v1/account', {
      token: alice.session,
      body: { balance: 1_000_000, name: '', lowBalanceThreshold: -1 },
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['balance', 'lowBalanceThreshold', 'name'])
    expect((await accountOf(alice)).balance).toBe(0)
  })
})

describe('POST /v1/admin/accounts/{accountId}/credits', () => {
  it('does not exist when no admin token is configured', async () => {
    const response = await server.post(`/v1/admin/accounts/${alice.accountId}/credits`, {
      token: ADMIN_TOKEN,
      body: { amount: 10 },
    })
    expectProblem(response, 404, 'not-found')
    expect((await accountOf(alice)).balance).toBe(0)
  })

  describe('with an admin token configured', () => {
    let admin: TestServer
    let carol: TestAccount

    beforeAll(async () => {
      admin = await startServer({ config: { adminToken: ADMIN_TOKEN } })
      carol = await signUp(admin, 'Carol Ltd')
    })
    afterAll(() => admin.close())

    const topUp = (accountId: string, token: string | undefined, body: unknown) =>
      admin.post(`/v1/admin/accounts/${accountId}/credits`, { ...(token ? { token } : {}), body })

    it('adds credits and answers 200 with the new balance', async () => {
      const account = await signUp(admin)
      const first = await topUp(account.accountId, ADMIN_TOKEN, { amount: 250 })
      expect(first.status).toBe(200)
      expect(first.body).toEqual({ balance: 250 })
      const second = await topUp(account.accountId, ADMIN_TOKEN, { amount: 1_000_000_000 })
      expect(second.body).toEqual({ balance: 1_000_000_250 })
      expect((await accountOf(account, admin)).balance).toBe(1_000_000_250)
    })

    it('refuses a wrong admin token, a session JWT and an API key with 401, and adds nothing', async () => {
      const key = await createKey(admin, carol, 'Full')
      for (const token of [undefined, 'admin-token-0123456780', `${ADMIN_TOKEN}x`, carol.session, key]) {
        const response = await topUp(carol.accountId, token, { amount: 10 })
        expectProblem(response, 401, 'unauthorized')
        expect(response.headers.get('www-authenticate')).toBe('Bearer')
      }
      expect((await accountOf(carol, admin)).balance).toBe(0)
    })

    it('answers 404 for an unknown or malformed account id', async () => {
      for (const id of ['0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid']) {
        expectProblem(await topUp(id, ADMIN_TOKEN, { amount: 10 }), 404, 'not-found')
      }
    })

    it('refuses amounts of 0, 1000000001, "5", 1.5 and none with 422 naming amount, and leaves the balance alone', async () => {
      const account = await signUp(admin)
      expect((await topUp(account.accountId, ADMIN_TOKEN, { amount: 40 })).status).toBe(200)
      for (const body of [{ amount: 0 }, { amount: 1_000_000_001 }, { amount: '5' }, { amount: 1.5 }, { amount: -5 }, {}]) {
        const response = await topUp(account.accountId, ADMIN_TOKEN, body)
        expectProblem(response, 422, 'validation')
        expect(response.body.errors.map((e: any) => e.field)).toEqual(['amount'])
      }
      expect((await accountOf(account, admin)).balance).toBe(40)
    })
  })
})
