import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createLogger } from '../../src/platform/logger.js'
import { TestServer, testConfig } from '../support/harness.js'
import { freshDatabase } from '../support/store.js'

let server: TestServer
const lines: string[] = []

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  // The production logger, at the most verbose level, writing into memory.
  const logger = createLogger({ logLevel: 'trace' }, sink)
  const config = testConfig(await freshDatabase(), { logLevel: 'trace' })
  const app = await buildApp(config, { logger })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  server = new TestServer(app, url, config)
})
afterAll(() => server.close())

describe('logs', () => {
  it('never hold a password, a session token or an API key, even at trace level', async () => {
    const email = 'logging@example.com'
    const password = 'a very secret password 42'
    await server.post('/v1/auth/signup', { body: { email, password } })
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    await server.post('/v1/auth/login', { body: { email, password: 'wrong password 4242' } })
    const session: string = login.body.token
    const key: string = (await server.post('/v1/keys', { token: session, body: { name: 'k' } })).body
    await server.get('/v1/account', { token: key })
    await server.get('/v1/account', { token: `${key.slice(0, -1)}X` })
    await server.get(`/v1/account?token=${session}&key=${key}`, { token: key })

    const text = lines.join('')
    expect(lines.length).toBeGreaterThan(10)
    expect(text).toContain('/v1/account')
    for (const secret of [password, 'wrong password 4242', session, key, key.slice(8), session.split('.')[2]!]) {
      expect(text).not.toContain(secret)
    }
    expect(text).toContain('token=[redacted]')
  })
})
