import { SignJWT, type JWTPayload } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, TEST_JWT_SECRET, type ApiResponse, type TestServer } from '../../../test/support/harness.js'
import { ManualClock } from '../../platform/clock.js'
import { deriveKey } from '../../platform/secrets.js'

const SESSION_KEY = deriveKey(TEST_JWT_SECRET, 'session-jwt')
const PUSH_KEY = deriveKey(TEST_JWT_SECRET, 'push-token')
const TWELVE_HOURS_MS = 12 * 60 * 60 * 1000

let server: TestServer
let alice: TestAccount

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
})
afterAll(() => server.close())

interface Forgery {
  key?: Uint8Array
  alg?: string
  issuer?: string
  audience?: string
  claims?: JWTPayload
  expiresInS?: number
}

/** A session JWT made by hand; with no overrides it is what the server itself would issue. */
async function forgeSession(account: TestAccount, forgery: Forgery = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT(forgery.claims ?? { acc: account.accountId })
    .setProtectedHeader({ alg: forgery.alg ?? 'HS256', typ: 'JWT' })
    .setIssuer(forgery.issuer ?? 'messaging-platform')
    .setAudience(forgery.audience ?? 'dashboard-session')
    .setSubject('0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69')
    .setIssuedAt(now)
    .setExpirationTime(now + (forgery.expiresInS ?? 3600))
    .sign(forgery.key ?? SESSION_KEY)
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

function expectRefusedSession(response: ApiResponse, path: string): void {
  expectWholeProblem(response, {
    status: 401,
    slug: 'unauthorized',
    title: 'Unauthorized',
    detail: 'The session token is invalid or expired',
    instance: path,
  })
  expect(response.headers.get('www-authenticate')).toBe('Bearer')
}

/** Both kinds of route that take a session: one that also takes API keys, one that takes a session only. */
async function expectRefusedEverywhere(token: string): Promise<void> {
  expectRefusedSession(await server.get('/v1/account', { token }), '/v1/account')
  expectRefusedSession(await server.get('/v1/keys', { token }), '/v1/keys')
}

describe('session JWTs', () => {
  it('accepts a hand-made token with the right key, algorithm, issuer, audience and claims', async () => {
    // The control for every refusal below: the forgeries differ from this one in one respect only.
    const token = await forgeSession(alice)
    const response = await server.get('/v1/account', { token })
    expect(response.status).toBe(200)
    expect(response.body.id).toBe(alice.accountId)
    expect((await server.get('/v1/keys', { token })).status).toBe(200)
  })

  it('refuses a token signed with another secret', async () => {
    const otherKey = deriveKey('another-secret-0123456789abcdefghijklmnopqrstuvwxyz', 'session-jwt')
    await expectRefusedEverywhere(await forgeSession(alice, { key: otherKey }))
  })

  it('refuses a token with alg none', async () => {
    const now = Math.floor(Date.now() / 1000)
    const header = base64url({ alg: 'none', typ: 'JWT' })
    const payload = base64url({
      acc: alice.accountId,
      sub: '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69',
      iss: 'messaging-platform',
      aud: 'dashboard-session',
      iat: now,
      exp: now + 3600,
    })
    await expectRefusedEverywhere(`${header}.${payload}.`)
  })

  it('refuses a token signed with HS512 under the session key', async () => {
    await expectRefusedEverywhere(await forgeSession(alice, { alg: 'HS512' }))
  })

  it('refuses a token under the session key but for another audience', async () => {
    await expectRefusedEverywhere(await forgeSession(alice, { audience: 'push' }))
  })

  it('refuses a token under the session key but from another issuer', async () => {
    await expectRefusedEverywhere(await forgeSession(alice, { issuer: 'someone-else' }))
  })

  it('refuses a token signed with the push-token key, whatever its audience', async () => {
    await expectRefusedEverywhere(await forgeSession(alice, { key: PUSH_KEY }))
    await expectRefusedEverywhere(await forgeSession(alice, { key: PUSH_KEY, audience: 'push' }))
  })

  it('refuses a token without the account claim', async () => {
    await expectRefusedEverywhere(await forgeSession(alice, { claims: { channels: ['orders'] } }))
  })

  it('refuses a token whose signature was tampered with', async () => {
    const [header, payload, signature] = (await forgeSession(alice)).split('.')
    const flipped = (signature![0] === 'A' ? 'B' : 'A') + signature!.slice(1)
    await expectRefusedEverywhere(`${header}.${payload}.${flipped}`)
  })

  it('refuses a token whose payload was swapped for another account', async () => {
    const bob = await signUp(server, 'Bob Ltd')
    const [header, , signature] = (await forgeSession(alice)).split('.')
    const [, bobPayload] = (await forgeSession(bob)).split('.')
    await expectRefusedEverywhere(`${header}.${bobPayload}.${signature}`)
  })
})

describe('session expiry', () => {
  it('accepts a session until 12 hours after login and refuses it from then on', async () => {
    const clock = new ManualClock('2026-03-01T08:00:00.000Z')
    const timed = await startServer({ clock })
    try {
      const account = await signUp(timed)
      const login = await timed.post('/v1/auth/login', { body: { email: account.email, password: account.password } })
      expect(login.body.expiresAt).toBe('2026-03-01T20:00:00.000Z')

      clock.advance(TWELVE_HOURS_MS - 1000)
      expect((await timed.get('/v1/account', { token: login.body.token })).status).toBe(200)

      clock.advance(1000)
      const expired = await timed.get('/v1/account', { token: login.body.token })
      expectWholeProblem(expired, {
        status: 401,
        slug: 'unauthorized',
        title: 'Unauthorized',
        detail: 'The session token is invalid or expired',
        instance: '/v1/account',
      })
      expect(expired.headers.get('www-authenticate')).toBe('Bearer')
      expect((await timed.get('/v1/keys', { token: login.body.token })).status).toBe(401)

      // A fresh login at the new time works again.
      const again = await timed.post('/v1/auth/login', { body: { email: account.email, password: account.password } })
      expect((await timed.get('/v1/account', { token: again.body.token })).status).toBe(200)
    } finally {
      await timed.close()
    }
  })
})
