import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../support/child-server.js'
import { createKey, signUp } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'

// Debian's package (`apt-get install prometheus`); .ci/run installs it. A fresh machine
// running the README's `npm test` may not have it: there this test is skipped, and in CI
// (CI set) a missing binary fails it instead.
const PROMETHEUS = '/usr/bin/prometheus'
const available = existsSync(PROMETHEUS)
const METRICS_TOKEN = 'metrics-token-for-prometheus-0123'


interface QueryResult {
  metric: Record<string, string>
  value: [number, string]
}

describe.skipIf(!available && !process.env.CI)('a real Prometheus scraping /metrics', () => {
  let server: TestServer
  let prometheus: ChildProcess | undefined
  let prometheusUrl: string
  let dataDir: string
  let output = ''
  const killPrometheus = () => prometheus?.kill('SIGKILL')

  const query = async (expression: string): Promise<QueryResult[]> => {
    const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expression)}`)
    const body = (await response.json()) as { status: string; data: { resultType: string; result: QueryResult[] } }
    expect(body.status).toBe('success')
    return body.data.result
  }

  beforeAll(async () => {
    if (!available) throw new Error(`${PROMETHEUS} is missing: CI must install Debian's prometheus package (.ci/run does)`)
    server = await startServer({ config: { metricsEnabled: true, metricsToken: METRICS_TOKEN } })
    dataDir = mkdtempSync(join(tmpdir(), 'mp-prometheus-'))
    const target = new URL(server.url).host
    writeFileSync(
      join(dataDir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: messaging',
        '    metrics_path: /metrics',
        '    authorization:',
        '      type: Bearer',
        `      credentials: ${METRICS_TOKEN}`,
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    )
    const port = await freePort()
    prometheusUrl = `http://127.0.0.1:${port}`
    prometheus = spawn(
      PROMETHEUS,
      [`--config.file=${join(dataDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dataDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    prometheus.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    prometheus.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    // Never left running if the test process ends early.
    process.once('exit', killPrometheus)
  }, 60_000)

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve))
      prometheus.kill('SIGTERM')
      await exited
    }
    process.off('exit', killPrometheus)
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    await server?.close()
  })

  it('scrapes the server (up == 1) and reads a counter of each module', async () => {
    const alice = await signUp(server)
    const key = await createKey(server, alice, 'Playground')
    // Nothing listens on port 1: every attempt fails, and the failure counter moves.
    const webhook = await server.post('/v1/webhooks', { token: await createKey(server, alice, 'Full'), body: { endpoint: 'https://127.0.0.1:1/hook', eventType: 'ContactCreated' } })
    expect(webhook.status).toBe(201)
    // The fan-out's first pass (which starts it at the end of the outbox) before any event.
    await server.app.platform.relay.drain()
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+14155550123'], content: 'Scraped', senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    const imported = await server.post('/v1/contacts/import', { token: key, rawBody: 'phoneNumber\n+14155550301\n', contentType: 'text/csv' })
    expect(imported.status).toBe(202)
    const published = await server.post('/v1/push/publish', { token: key, body: { channel: 'orders', event: 'shipped', data: { id: 1 } } })
    expect(published.status).toBe(200)

    await expect
      .poll(async () => {
        expect(prometheus!.exitCode, output).toBeNull()
        try {
          return (await query('up{job="messaging"} == 1')).length
        } catch {
          return 0 // not listening yet
        }
      }, { timeout: 30_000, interval: 250 })
      .toBe(1)

    // One counter of each module, as Prometheus stored it after a scrape that followed the send.
    const counters = [
      'http_requests_total{route="/v1/sms/send",method="POST",status_class="2xx"}',
      'sms_recipient_transitions_total{from="queued",to="sent",carrier="sandbox"}',
      'outbox_events_relayed_total{consumer="webhooks"}',
      'contact_import_rows_total{outcome="created"}',
      'push_publishes_total',
      'webhook_attempts_total{outcome="failed"}',
      'event_loop_lag_seconds_count',
      'process_cpu_user_seconds_total',
    ]
    for (const counter of counters) {
      await expect
        .poll(async () => Number((await query(counter))[0]?.value[1] ?? 0), { timeout: 15_000, interval: 250 })
        .toBeGreaterThan(0)
    }
    // The store-wide gauges arrive with their scope label.
    const queued = await query('sms_queued_recipients')
    expect(queued.map((r) => r.metric)).toEqual([{ __name__: 'sms_queued_recipients', instance: new URL(server.url).host, job: 'messaging', scope: 'store' }])
  }, 90_000)
})
