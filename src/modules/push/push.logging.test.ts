import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../app.js'
import { createLogger } from '../../platform/logger.js'
import { createKey, signUp } from '../../../test/support/fixtures.js'
import { TestServer, testConfig } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'
import { freshDatabase } from '../../../test/support/store.js'

let server: TestServer
const lines: string[] = []

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  // The production logger, at its most verbose, writing into memory.
  const logger = createLogger({ logLevel: 'trace' }, sink)
  const config = testConfig(await freshDatabase(), { logLevel: 'trace' })
  const app = await buildApp(config, { logger })
  server = new TestServer(app, await app.listen({ host: '127.0.0.1', port: 0 }), config)
})
afterAll(() => server?.close())

describe('push logs', () => {
  it('never hold a push token: the stream URL is logged with the token masked', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account)
    const issued = await server.post('/v1/push/tokens', { token: key, body: { channels: ['logged'] } })
    const token: string = issued.body.token
    const reader = await SseReader.open(pushStreamUrl(server, token, '0'))
    await reader.waitForConnected()
    await publishPush(server, key, 'logged', 'e', { n: 1 })
    await reader.waitForEvents(1)
    reader.close()
    // A refused token is not logged either, nor is a token that was expired or tampered with.
    const tampered = `${token.slice(0, -4)}AAAA`
    expect((await fetch(pushStreamUrl(server, tampered))).status).toBe(401)
    expect((await fetch(`${server.url}/v1/push/stream?lastEventId=1&token=${tampered}`)).status).toBe(401)
    await issuePushToken(server, key, ['another'])

    const text = lines.join('')
    expect(text).toContain('/v1/push/stream?token=[redacted]&lastEventId=0')
    expect(text).toContain('/v1/push/stream?lastEventId=1&token=[redacted]')
    for (const secret of [token, tampered, token.split('.')[1]!, token.split('.')[2]!]) expect(text).not.toContain(secret)
  })
})
