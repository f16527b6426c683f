import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer, type TestServer } from './support/harness.js'

let server: TestServer
beforeAll(async () => {
  // The walkthrough's campaign tracks its links, which point at PUBLIC_URL, as there.
  server = await startServer({ config: { publicUrl: 'http://127.0.0.1:3000' } })
})
afterAll(() => server.close())

/** The shell blocks of the README's curl walkthrough, in order. */
function walkthrough(): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const section = readme.split('## A first session with curl')[1]!.split('\n## ')[0]!
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n')
}

describe('the README walkthrough', () => {
  it('works as printed against a fresh server', async () => {
    const script = walkthrough()
    expect(script).toContain('BASE=http://127.0.0.1:3000')
    // Asynchronous on purpose: the server answering these requests runs in this process.
    const { stdout: output } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script.replace('BASE=http://127.0.0.1:3000', `BASE=${server.url}`)], {
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(output).toMatch(/"accountId":"[0-9a-f-]{36}","userId":"[0-9a-f-]{36}"/)
    expect(output).toMatch(/"name":"Acme","balance":0,"lowBalanceThreshold":100,"inboundNumbers":\[\]/)
    expect(output).toMatch(/"items":\[\{"id":"[0-9a-f-]{36}","name":"backend","prefix":"mk_live_\w{4}","permission":"Full"/)
    expect(output).toMatch(/"created":2,"existing":0,"duplicates":1,"invalid":\[\{"value":"12345"/)
    expect(output).toMatch(/"phoneNumber":"\+447400123456".*"firstName":"Élodie"/)
    expect(output).toMatch(/\{"importId":"[0-9a-f-]{36}"\}/)
    expect(output).toMatch(/\{"count":\d+,"optedOut":0,"sample":\[/)
    expect(output).toMatch(/"status":"queued","recipients":2,"segments":1,"encoding":"GSM-7","creditsUsed":0,"sandbox":true,"skipped":\[\]/)
    expect(output).toMatch(/"recipients":\[\{"phoneNumber":"\+14155550100","status":"delivered"/)
    expect(output).toMatch(/\{"status":"sending","recipients":\d+,"creditsUsed":0\}/)
    expect(output).toMatch(/"name":"Gold members".*"status":"completed"/)
    expect(output).toMatch(/\{"text":"Hi Alex, your member offer: http:\/\/127\.0\.0\.1:\d+\/l\/[0-9a-f]{14}0","encoding":"GSM-7","segments":1\}/)
    expect(output).toMatch(/\{"recipients":2,"credits":0\}/)
    expect(output).toMatch(/"name":"Gold offer".*"status":"paused"/)
    expect(output).toMatch(/"name":"Gold offer".*"status":"completed".*"trackLinks":true,"maxPerMinute":30/)
    expect(output).not.toMatch(/"status":[45]\d\d/)
  })
})
