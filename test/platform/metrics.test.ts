import { pino } from 'pino'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MessagingMetrics } from '../../src/modules/messaging/metrics.js'
import { systemClock } from '../../src/platform/clock.js'
import { ConfigError, loadConfig } from '../../src/platform/config.js'
import { openStore } from '../../src/platform/db/connect.js'
import { Metrics } from '../../src/platform/metrics/registry.js'
import { OutboxRelay } from '../../src/platform/outbox/relay.js'
import { createKey, expectWholeProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../support/sse.js'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'

interface Family {
  help: string
  type: string
  samples: { name: string; labels: Record<string, string>; value: number }[]
}

/** The text format, read strictly enough that a malformed line fails the test. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const familyOf = (name: string) => {
    let family = families.get(name)
    if (!family) families.set(name, (family = { help: '', type: '', samples: [] }))
    return family
  }
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta) {
      if (meta[1] === 'HELP') familyOf(meta[2]!).help = meta[3]!
      else familyOf(meta[2]!).type = meta[3]!
      continue
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!sample) throw new Error(`not a line of the text format: ${line}`)
    const labels: Record<string, string> = {}
    const labelText = sample[2] ?? ''
    const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g
    let consumed = 0
    for (const match of labelText.matchAll(labelPattern)) {
      labels[match[1]!] = match[2]!
      consumed += match[0].length
    }
    if (consumed !== labelText.length) throw new Error(`malformed labels: ${line}`)
    // prom-client writes NaN as `Nan`; Prometheus reads floats case-insensitively (Go's ParseFloat).
    const value = Number(sample[3] === '+Inf' ? Infinity : sample[3] === '-Inf' ? -Infinity : sample[3])
    if (Number.isNaN(value) && sample[3]!.toLowerCase() !== 'nan') throw new Error(`not a number: ${line}`)
    const name = sample[1]!
    const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count|total|created)$/, '')) ?? familyOf(name)
    family.samples.push({ name, labels, value })
  }
  return families
}

/** The sum of a family's samples whose labels include `labels`. */
function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count|total)$/, ''))
  return (family?.samples ?? [])
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
}

describe('METRICS_ENABLED and METRICS_TOKEN', () => {
  const base = { DATABASE_URL: 'sqlite::memory:' }

  it('are off and unset by default, and read as given', () => {
    expect(loadConfig(base)).toMatchObject({ metricsEnabled: false, metricsToken: undefined })
    expect(loadConfig({ ...base, METRICS_ENABLED: 'true', METRICS_TOKEN: METRICS_TOKEN })).toMatchObject({ metricsEnabled: true, metricsToken: METRICS_TOKEN })
  })

  it('refuse a value that is not a boolean and a token under 16 characters, together', () => {
    const error = (() => {
      try {
        loadConfig({ ...base, METRICS_ENABLED: 'yes', METRICS_TOKEN: 'short' })
      } catch (err) {
        return err
      }
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual([
      'METRICS_ENABLED must be true or false, got "yes"',
      'METRICS_TOKEN must be at least 16 characters',
    ])
  })
})

describe('GET /metrics when METRICS_ENABLED is not true', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(() => server.close())

  it('does not exist: 404 as problem+json', async () => {
    const response = await server.get('/metrics')
    expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', instance: '/metrics' })
  })
})

describe('GET /metrics with METRICS_ENABLED=true and METRICS_TOKEN set', () => {
  let server: TestServer
  let alice: TestAccount
  let key: string
  const scrape = async () => {
    const response = await server.get('/metrics', { token: METRICS_TOKEN })
    expect(response.status).toBe(200)
    return { text: response.text, families: parseExposition(response.text) }
  }

  beforeAll(async () => {
    // Write coalescing forced on, so its gauge has a known value (auto follows the event loop's load: push.stream.test.ts).
    server = await startServer({ config: { metricsEnabled: true, metricsToken: METRICS_TOKEN, adminToken: TEST_ADMIN_TOKEN, pushCoalesceWrites: 'always' } })
    alice = await signUp(server)
    key = await createKey(server, alice)
    await topUp(server, alice.accountId, 1_000)
  })
  afterAll(() => server.close())

  it('answers 401 without a token, with a wrong one, and with an API key or session', async () => {
    const expected = { status: 401, slug: 'unauthorized', title: 'Unauthorized', detail: 'Send Authorization: Bearer <METRICS_TOKEN>' }
    for (const token of [undefined, 'wrong-token-0123456789abcdef', key, alice.session]) {
      const response = await server.get('/metrics', token === undefined ? {} : { token })
      expectWholeProblem(response, expected)
      expect(response.headers.get('www-authenticate')).toBe('Bearer')
    }
    const basic = await server.get('/metrics', { headers: { authorization: `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}` } })
    expectWholeProblem(basic, expected)
  })

  it('answers the Prometheus text format; every family has help text and a type', async () => {
    const response = await server.get('/metrics', { token: METRICS_TOKEN })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const families = parseExposition(response.text)
    for (const [name, family] of families) {
      expect(family.help, name).not.toBe('')
      expect(['counter', 'gauge', 'histogram', 'summary'], name).toContain(family.type)
    }
    const expected = {
      http_requests_total: 'counter',
      http_request_duration_seconds: 'histogram',
      event_loop_lag_seconds: 'histogram',
      event_loop_stalls_total: 'counter',
      background_slices_total: 'counter',
      background_slices_over_20ms_total: 'counter',
      nodejs_eventloop_lag_p99_seconds: 'gauge',
      process_cpu_user_seconds_total: 'counter',
      sms_recipients_queued_total: 'counter',
      sms_recipient_transitions_total: 'counter',
      sms_parts_submitted_total: 'counter',
      sms_dispatch_batch_duration_seconds: 'histogram',
      sms_inbound_messages_total: 'counter',
      sms_queued_recipients: 'gauge',
      sms_oldest_queued_age_seconds: 'gauge',
      broadcast_recipients_queued: 'histogram',
      outbox_events_relayed_total: 'counter',
      outbox_backlog_events: 'gauge',
      outbox_relay_lag_seconds: 'gauge',
      contact_import_rows_total: 'counter',
      push_open_streams: 'gauge',
      push_coalescing_writes: 'gauge',
      push_publishes_total: 'counter',
      push_deliveries_total: 'counter',
      push_slow_consumers_dropped_total: 'counter',
      store_waiting_queries: 'gauge',
      store_busy_connections: 'gauge',
      store_wait_seconds: 'histogram',
    }
    for (const [name, type] of Object.entries(expected)) expect(families.get(name)?.type, name).toBe(type)
    // Store-wide gauges carry scope="store": the same on every node, aggregated with max().
    expect(families.get('sms_queued_recipients')!.samples).toEqual([{ name: 'sms_queued_recipients', labels: { scope: 'store' }, value: expect.any(Number) }])
    expect(families.get('outbox_backlog_events')!.samples.map((s) => s.labels)).toContainEqual({ consumer: 'webhooks', scope: 'store' })
  })

  it('counts HTTP requests by route pattern, method and status class, never by the path sent', async () => {
    const before = (await scrape()).families
    const messageId = '7d9f1c52-0000-4000-8000-1234567890ab'
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    expect((await server.get(`/v1/sms/${messageId}`, { token: key })).status).toBe(404)
    expect((await server.get('/no/such/path/secret-looking-segment')).status).toBe(404)
    const { text, families } = await scrape()
    const delta = (labels: Record<string, string>) => valueOf(families, 'http_requests_total', labels) - valueOf(before, 'http_requests_total', labels)
    expect(delta({ route: '/v1/account', method: 'GET', status_class: '2xx' })).toBe(2)
    expect(delta({ route: '/v1/sms/:id', method: 'GET', status_class: '4xx' })).toBe(1)
    expect(delta({ route: 'unmatched', method: 'GET', status_class: '4xx' })).toBe(1)
    expect(valueOf(families, 'http_request_duration_seconds_count', { route: '/v1/account', method: 'GET', status_class: '2xx' })).toBeGreaterThanOrEqual(2)
    expect(text).not.toContain(messageId)
    expect(text).not.toContain('secret-looking-segment')
  })

  it('moves the recipient counters after a send through the API, labelled by transition and carrier', async () => {
    // Per-recipient events are written only for a reader: this webhook (which nothing answers) is one.
    const webhook = await server.post('/v1/webhooks', { token: key, body: { endpoint: 'https://127.0.0.1:9/unanswered', eventType: 'SmsSent' } })
    expect(webhook.status).toBe(201)
    const before = (await scrape()).families
    const response = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+14155550123', '+14155550042'], content: 'Metrics', senderId: 'Acme' } })
    expect(response.status).toBe(201)
    // +1415555004x fails at the simulated carrier: one delivered, one failed.
    const delta = (families: Map<string, Family>, name: string, labels: Record<string, string>) => valueOf(families, name, labels) - valueOf(before, name, labels)
    await expect
      .poll(async () => {
        const { families } = await scrape()
        return {
          queued: delta(families, 'sms_recipients_queued_total', { kind: 'api' }),
          sent: delta(families, 'sms_recipient_transitions_total', { from: 'queued', to: 'sent', carrier: 'simulator' }),
          delivered: delta(families, 'sms_recipient_transitions_total', { from: 'sent', to: 'delivered', carrier: 'simulator' }),
          failed: delta(families, 'sms_recipient_transitions_total', { from: 'sent', to: 'failed', carrier: 'simulator' }),
          parts: delta(families, 'sms_parts_submitted_total', { carrier: 'simulator', outcome: 'accepted' }),
          batches: delta(families, 'sms_dispatch_batch_duration_seconds_count', {}),
          // The fan-out relays on a connection of its own, at its own pace.
          relayedToWebhooks: delta(families, 'outbox_events_relayed_total', { consumer: 'webhooks' }) > 0,
          // The background work ran in slices the event-loop stalls are counted against.
          dispatchSlices: delta(families, 'background_slices_total', { work: 'dispatch' }) > 0,
          receiptSlices: delta(families, 'background_slices_total', { work: 'receipts' }) > 0,
        }
      }, { timeout: 15_000, interval: 50 })
      .toEqual({ queued: 2, sent: 2, delivered: 1, failed: 1, parts: 2, batches: expect.any(Number), relayedToWebhooks: true, dispatchSlices: true, receiptSlices: true })
    const { families } = await scrape()
    expect(delta(families, 'sms_dispatch_batch_duration_seconds_count', {})).toBeGreaterThanOrEqual(1)
  })

  it('counts inbound messages and the confirmation reply an opt-out queues', async () => {
    const before = (await scrape()).families
    const inbound = await server.post('/v1/sms/inbound', { token: key, body: { from: '+14155550777', to: '+14155550999', content: 'STOP' } })
    expect(inbound.status).toBeLessThan(300)
    const { families } = await scrape()
    expect(valueOf(families, 'sms_inbound_messages_total') - valueOf(before, 'sms_inbound_messages_total')).toBe(1)
    expect(valueOf(families, 'sms_recipients_queued_total', { kind: 'reply' }) - valueOf(before, 'sms_recipients_queued_total', { kind: 'reply' })).toBe(1)
  })

  it('counts CSV import rows by outcome once the import ends', async () => {
    const before = (await scrape()).families
    const csv = 'phoneNumber,firstName\n+14155550201,Ada\n+14155550202,Grace\nnot-a-number,Bad\n'
    const accepted = await server.post('/v1/contacts/import', { token: key, rawBody: csv, contentType: 'text/csv' })
    expect(accepted.status).toBe(202)
    const importId = accepted.body.importId as string
    await expect.poll(async () => (await server.get(`/v1/contacts/imports/${importId}`, { token: key })).body.status, { timeout: 15_000, interval: 50 }).toBe('completed')
    const rows = (families: Map<string, Family>, outcome: string) => valueOf(families, 'contact_import_rows_total', { outcome }) - valueOf(before, 'contact_import_rows_total', { outcome })
    await expect
      .poll(async () => {
        const { families } = await scrape()
        return { created: rows(families, 'created'), existing: rows(families, 'existing'), invalid: rows(families, 'invalid') }
      }, { timeout: 5_000, interval: 50 })
      .toEqual({ created: 2, existing: 0, invalid: 1 })
    expect((await scrape()).text).not.toContain(importId)
  })

  it('counts push streams, publishes and deliveries', async () => {
    const before = (await scrape()).families
    const reader = await SseReader.open(pushStreamUrl(server, await issuePushToken(server, key, ['orders'])))
    try {
      await reader.waitForConnected()
      expect((await publishPush(server, key, 'orders', 'shipped', { id: 1 })).delivered).toBe(1)
      await reader.waitForEvents(1)
      const { families } = await scrape()
      const delta = (name: string) => valueOf(families, name) - valueOf(before, name)
      expect(valueOf(families, 'push_open_streams')).toBe(1)
      expect(valueOf(families, 'push_coalescing_writes')).toBe(1)
      expect({ publishes: delta('push_publishes_total'), deliveries: delta('push_deliveries_total'), dropped: delta('push_slow_consumers_dropped_total') }).toEqual({ publishes: 1, deliveries: 1, dropped: 0 })
    } finally {
      reader.close()
    }
    await expect.poll(async () => valueOf((await scrape()).families, 'push_open_streams'), { timeout: 5_000, interval: 50 }).toBe(0)
  })

  it("measures this node's waits for the store: a long read (reader thread on SQLite, a pool connection on PostgreSQL)", async () => {
    const before = valueOf((await scrape()).families, 'store_wait_seconds_count')
    const preview = await server.post('/v1/audience/segments/preview', { token: key, body: { rules: '[]' } })
    expect(preview.status).toBe(200)
    const { families } = await scrape()
    expect(valueOf(families, 'store_wait_seconds_count')).toBeGreaterThan(before)
    expect(valueOf(families, 'store_wait_seconds_bucket', { le: '+Inf' })).toBe(valueOf(families, 'store_wait_seconds_count'))
    // Idle, nothing waits (the background loops' brief turns on their connection aside).
    await expect.poll(async () => valueOf((await scrape()).families, 'store_waiting_queries'), { timeout: 5_000, interval: 50 }).toBe(0)
  })

  it('measures event-loop lag as a histogram, and counts each time the loop was held over 20 ms', async () => {
    const before = valueOf((await scrape()).families, 'event_loop_stalls_total')
    // This process is the server's: a synchronous task of 60 ms holds every request.
    const until = performance.now() + 60
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 300))
    const { families } = await scrape()
    expect(valueOf(families, 'event_loop_lag_seconds_count')).toBeGreaterThan(0)
    expect(valueOf(families, 'event_loop_lag_seconds_bucket', { le: '+Inf' })).toBe(valueOf(families, 'event_loop_lag_seconds_count'))
    expect(valueOf(families, 'event_loop_stalls_total')).toBeGreaterThanOrEqual(before + 1)
  })

  it('puts no account id, phone number, key or token in any label', async () => {
    const { text, families } = await scrape()
    for (const secret of [alice.accountId, alice.email, key, key.slice(0, 12), alice.session, METRICS_TOKEN, TEST_ADMIN_TOKEN, '+14155550123', '14155550123', '+14155550777']) {
      expect(text).not.toContain(secret)
    }
    // Bucket bounds (le) are numbers by design; every other label must come from a closed set.
    const labelValues = [...families.values()].flatMap((f) => f.samples.flatMap((s) => Object.entries(s.labels).filter(([name]) => name !== 'le').map(([, value]) => value)))
    for (const value of labelValues) {
      expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/)
      expect(value).not.toMatch(/^\+?\d{7,15}$/)
      expect(value).not.toMatch(/^mk_/)
    }
  })

  it('is left out of the OpenAPI document', async () => {
    const document = await server.get('/v1/openapi.json')
    expect(document.status).toBe(200)
    expect(Object.keys(document.body.paths)).not.toContain('/metrics')
  })
})

describe('the store-wide queue gauges', () => {
  it('count due recipients no dispatcher has claimed, up to the cap, and give the oldest one\'s age', async () => {
    // The API cannot leave a due recipient waiting while a dispatcher runs: recipients are
    // queued through it for later, the server is stopped, and they are made due directly.
    const server = await startServer()
    const account = await signUp(server)
    const key = await createKey(server, account, 'Playground')
    const scheduledAt = new Date(Date.now() + 3_600_000).toISOString()
    const recipients = ['+14155550101', '+14155550102', '+14155550103', '+14155550104', '+14155550105']
    expect((await server.post('/v1/sms/send', { token: key, body: { recipients, content: 'Later', senderId: 'Acme', scheduledAt } })).status).toBe(201)
    expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550106' } })).status).toBe(201)
    await server.close()

    const store = openStore(server.config.database)
    try {
      const tenMinutesAgo = new Date(Date.now() - 600_000).toISOString()
      await store.db.updateTable('message_recipients').set({ due_at: tenMinutesAgo }).execute()
      // The relay's cursor back at the start: every event of the run is pending again.
      await store.db.updateTable('outbox_cursors').set({ tx_id: '0', last_id: 0 }).execute()
      const logger = pino({ level: 'silent' })
      const metrics = new Metrics(logger, { enabled: false })
      new MessagingMetrics(metrics).watchQueue(store.db, store.readLong, systemClock, 3)
      const relay = new OutboxRelay({ store, logger, clock: systemClock, pollMs: 1000, retentionMs: 3_600_000, metrics })
      relay.subscribe({ name: 'webhooks', handle: async () => {} })
      const families = parseExposition((await metrics.expose()).text)
      expect(valueOf(families, 'sms_queued_recipients', { scope: 'store' })).toBe(3)
      expect(valueOf(families, 'sms_oldest_queued_age_seconds', { scope: 'store' })).toBeGreaterThanOrEqual(600)
      expect(valueOf(families, 'sms_oldest_queued_age_seconds', { scope: 'store' })).toBeLessThan(660)

      const events = Number((await sql<{ n: number }>`select count(*) as n from outbox`.execute(store.db)).rows[0]!.n)
      expect(events).toBeGreaterThan(0)
      expect(valueOf(families, 'outbox_backlog_events', { consumer: 'webhooks', scope: 'store' })).toBe(events)
      expect(valueOf(families, 'outbox_relay_lag_seconds', { consumer: 'webhooks', scope: 'store' })).toBeGreaterThan(0)
    } finally {
      await store.close()
    }
  })
})
