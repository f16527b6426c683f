import { createHmac } from 'node:crypto'
import { SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { deriveKey } from '../../platform/secrets.js'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, TEST_JWT_SECRET, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'

// Server time is a manual clock: expiry is tested by moving it, not by waiting.
const clock = new ManualClock(new Date(Math.floor(Date.now() / 1000) * 1000))
let server: TestServer
let account: TestAccount & { key: string }
const readers: SseReader[] = []

async function stream(token: string): Promise<SseReader> {
  const reader = await SseReader.open(pushStreamUrl(server, token))
  readers.push(reader)
  return reader
}

async function expectStream401(token: string): Promise<void> {
  const reader = await stream(token)
  await reader.waitForEnd()
  expectWholeProblem(reader.problem(), {
    status: 401, slug: 'unauthorized', title: 'Unauthorized', detail: 'The push token is invalid or expired', instance: '/v1/push/stream',
  })
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

function pushClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(clock.now().getTime() / 1000)
  return { acc: account.accountId, ch: ['secret'], iss: 'messaging-platform', aud: 'push-stream', iat: now, exp: now + 600, ...overrides }
}

beforeAll(async () => {
  server = await startServer({ clock })
  const a = await signUp(server)
  account = { ...a, key: await createKey(server, a, 'Full') }
})
afterAll(async () => {
  for (const reader of readers) reader.close()
  await server?.close()
})

describe('POST /v1/push/tokens', () => {
  it('issues a token for the channels, once each, that expires ttlSeconds from now (default 3600)', async () => {
    const issued = await server.post('/v1/push/tokens', { token: account.key, body: { channels: ['a', 'b', 'a'], userId: 'user-42' } })
    expect(issued.status).toBe(200)
    expect(issued.body).toEqual({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/), expiresAt: new Date(clock.now().getTime() + 3_600_000).toISOString(), channels: ['a', 'b'] })
    const shortLived = await server.post('/v1/push/tokens', { token: account.key, body: { channels: ['a'], ttlSeconds: 60 } })
    expect(shortLived.body.expiresAt).toBe(new Date(clock.now().getTime() + 60_000).toISOString())
    const reader = await stream(issued.body.token)
    expect(JSON.parse((await reader.waitForConnected()).data)).toEqual({ channels: ['a', 'b'], recovered: true })
  })

  it('refuses bad channel lists, user ids and lifetimes with 422 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'channels'],
      [{ channels: [] }, 'channels'],
      [{ channels: Array.from({ length: 101 }, (_, i) => `c${i}`) }, 'channels'],
      [{ channels: [''] }, 'channels[0]'],
      [{ channels: ['ok', 'c'.repeat(256)] }, 'channels[1]'],
      // 100 names of 255 characters would not fit in a URL inside a token.
      [{ channels: Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(255, 'x')) }, 'channels'],
      [{ channels: ['a'], userId: '' }, 'userId'],
      [{ channels: ['a'], ttlSeconds: 59 }, 'ttlSeconds'],
      [{ channels: ['a'], ttlSeconds: 86_401 }, 'ttlSeconds'],
      [{ channels: ['a'], ttlSeconds: 60.5 }, 'ttlSeconds'],
      [{ channels: ['a'], ttlSeconds: '3600' }, 'ttlSeconds'],
    ]
    for (const [body, field] of cases) {
      const response = await server.post('/v1/push/tokens', { token: account.key, body })
      expectWholeProblem(response, { status: 422, slug: 'validation', title: 'Validation failed', instance: '/v1/push/tokens', errors: [{ field, message: expect.any(String) }] })
    }
  })
})

describe('push token safety', () => {
  it('never takes a session JWT as a push token, nor a push token as a session', async () => {
    await expectStream401(account.session)
    const pushToken = await issuePushToken(server, account.key, ['a'])
    const asSession = await server.get('/v1/account', { token: pushToken })
    expectWholeProblem(asSession, { status: 401, slug: 'unauthorized', title: 'Unauthorized', instance: '/v1/account' })
    expect((await server.get('/v1/keys', { token: pushToken })).status).toBe(401)
  })

  it('tells the two apart by key as well as by audience', async () => {
    const now = Math.floor(clock.now().getTime() / 1000)
    // Push claims and audience, signed with the session key.
    const pushBySessionKey = await new SignJWT(pushClaims()).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(deriveKey(TEST_JWT_SECRET, 'session-jwt'))
    await expectStream401(pushBySessionKey)
    // Session claims and audience, signed with the push key.
    const sessionByPushKey = await new SignJWT({ acc: account.accountId, sub: 'someone', iss: 'messaging-platform', aud: 'dashboard-session', iat: now, exp: now + 600 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(deriveKey(TEST_JWT_SECRET, 'push-token'))
    expect((await server.get('/v1/account', { token: sessionByPushKey })).status).toBe(401)
    // The right key with the session audience is no push token either.
    const wrongAudience = await new SignJWT(pushClaims({ aud: 'dashboard-session' })).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(deriveKey(TEST_JWT_SECRET, 'push-token'))
    await expectStream401(wrongAudience)
    // The control: the same construction with the push key and audience does open a stream.
    const genuine = await new SignJWT(pushClaims()).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(deriveKey(TEST_JWT_SECRET, 'push-token'))
    const reader = await stream(genuine)
    expect(reader.status).toBe(200)
    expect(JSON.parse((await reader.waitForConnected()).data).channels).toEqual(['secret'])
  })

  it('refuses alg none, another HMAC algorithm, and a token whose claims were changed', async () => {
    await expectStream401(`${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(pushClaims())}.`)
    const hs512 = await new SignJWT(pushClaims()).setProtectedHeader({ alg: 'HS512', typ: 'JWT' }).sign(deriveKey(TEST_JWT_SECRET, 'push-token'))
    await expectStream401(hs512)
    const genuine = await issuePushToken(server, account.key, ['mine'])
    const [header, , signature] = genuine.split('.')
    await expectStream401(`${header}.${base64url(pushClaims({ ch: ['someone-elses'] }))}.${signature}`)
    // A signature made with the raw JWT_SECRET instead of the derived key.
    const payload = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(pushClaims())}`
    await expectStream401(`${payload}.${createHmac('sha256', TEST_JWT_SECRET).update(payload).digest('base64url')}`)
  })

  it('refuses a header it does not understand, a token not yet valid, claims of the wrong type and a truncated token', async () => {
    const pushKey = deriveKey(TEST_JWT_SECRET, 'push-token')
    const signed = (header: Record<string, unknown>, claims: Record<string, unknown>) => {
      const input = `${base64url(header)}.${base64url(claims)}`
      return `${input}.${createHmac('sha256', pushKey).update(input).digest('base64url')}`
    }
    const now = Math.floor(clock.now().getTime() / 1000)
    // The control: built by hand the same way, it opens a stream.
    const control = await stream(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims()))
    expect(control.status).toBe(200)
    await control.waitForConnected()
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT', crit: ['exp'], exp: now + 600 }, pushClaims()))
    await expectStream401(signed({ alg: 'HS256', b64: false, crit: ['b64'] }, pushClaims()))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ nbf: now + 60 })))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ exp: String(now + 600) })))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ iat: 'yesterday' })))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ iss: 'someone-else' })))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ ch: [] })))
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, pushClaims({ exp: now })))
    const { exp: _exp, ...withoutExp } = pushClaims()
    await expectStream401(signed({ alg: 'HS256', typ: 'JWT' }, withoutExp))
    const genuine = await issuePushToken(server, account.key, ['mine'])
    const [header, payload] = genuine.split('.')
    await expectStream401(`${header}.${payload}`)
    await expectStream401(`${genuine}.`)
  })

  it('ends the stream when the token expires, and then answers its reconnect with 401', async () => {
    const token = await issuePushToken(server, account.key, ['expiring'], { ttlSeconds: 60 })
    const reader = await stream(token)
    await reader.waitForConnected()
    clock.advance(59_000)
    await publishPush(server, account.key, 'expiring', 'still-valid', {})
    await reader.waitForEvents(1)
    expect(reader.ended).toBe(false)
    clock.advance(1_000)
    // The shared loop checks expiry every second.
    await reader.waitForEnd(3_000)
    expect(reader.comments).toContain('token expired')
    expect((await publishPush(server, account.key, 'expiring', 'too-late', {})).delivered).toBe(0)
    await expectStream401(token)
  })
})
