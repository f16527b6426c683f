/** One run of bench:webhooks: the server and the receiver on a fresh store, the floor, the burst and one event at a time. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { createTestCa } from '../../test/support/tls.js'
import { waitQuiet } from '../lib/load.js'
import { createFreshDatabase, type FreshDatabase } from '../lib/postgres.js'
import { startServer, type RunningServer } from '../lib/server.js'
import { benchPhoneNumber } from '../messaging/contacts.js'
import { Floor } from './floor.js'
import { cpuSince, latencyOf, markCpu, now, ownArrivals, splitOf, summarize, type Latency, type PhaseResult, type Trigger } from './measure.js'
import { Receiver, type ReceivedRecords } from './receiver-client.js'
import { recordedDeliveries } from './store.js'

const JWT_SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz'

export interface Build {
  entry: string
  code: string
}

/** What a run takes from bench:webhooks' flags (main.ts reads them). */
export interface RunSettings {
  store: 'sqlite' | 'postgres'
  webhookCount: number
  eventCount: number
  /** ms between the one-at-a-time events. */
  pauseMs: number
  /** Per phase. */
  maxWaitMs: number
  /** The one-at-a-time phase runs: not --no-paced. */
  paced: boolean
  /** Before each phase, wait up to this many seconds for a second with the machine under `noise` % of a core busy. */
  waitQuietS: number
  noise: number
  /** --outbox-poll-ms as given (OUTBOX_POLL_MS). */
  outboxPollMs: string | undefined
  /** --node-arg, for the server. */
  nodeArgs: string[]
  /** PostgreSQL's admin URL (a fresh database beside it per run). */
  adminUrl: string
}

async function call(url: string, method: string, body: unknown, token?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`)
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) }
}

async function newKey(server: RunningServer): Promise<string> {
  const email = `webhooks-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`
  const password = 'bench password 0123'
  await call(`${server.url}/v1/auth/signup`, 'POST', { email, password, accountName: 'Webhooks bench' })
  const { token } = (await call(`${server.url}/v1/auth/login`, 'POST', { email, password })).body
  return (await call(`${server.url}/v1/keys`, 'POST', { name: 'bench', permission: 'Full' }, token)).body as string
}

/** Creates the webhooks through the API, ten requests at a time; returns their ids by index. */
async function createWebhooks(server: RunningServer, key: string, receiver: Receiver, webhookCount: number): Promise<string[]> {
  const ids: string[] = new Array(webhookCount)
  let next = 0
  const loop = async () => {
    for (let i = next++; i < webhookCount; i = next++) {
      ids[i] = (await call(`${server.url}/v1/webhooks`, 'POST', { endpoint: receiver.url(`/w/${i}`), eventType: 'ContactCreated' }, key)).body as string
    }
  }
  await Promise.all(Array.from({ length: 10 }, loop))
  return ids
}

let phoneCounter = 0
async function trigger(server: RunningServer, key: string): Promise<Trigger> {
  const sentAt = now()
  const { status, body } = await call(`${server.url}/v1/contacts/single`, 'POST', { phoneNumber: benchPhoneNumber(phoneCounter++) }, key)
  if (status !== 201) throw new Error(`POST /v1/contacts/single answered ${status}: the number existed`)
  return { contactId: body.id as string, sentAt, answeredAt: now() }
}

/** Every PROBE_EVERY_MS, one GET /v1/account after another: how a request unrelated to webhooks fares. */
const PROBE_EVERY_MS = 20
const PROBE_IDLE_MS = 3000

function probeRequests(server: RunningServer, key: string): { stop(): Promise<Latency & { count: number }> } {
  let running = true
  const latencies: number[] = []
  const done = (async () => {
    while (running) {
      const started = now()
      await call(`${server.url}/v1/account`, 'GET', undefined, key)
      latencies.push(now() - started)
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return { ...latencyOf(latencies), count: latencies.length }
    },
  }
}

export interface RunResult {
  floor: PhaseResult
  burst: PhaseResult
  /** GET /v1/account on the idle server just before the burst, and during it. */
  requests: { idle: Latency & { count: number }; burst: Latency & { count: number } }
  paced: PhaseResult | undefined
  ratio: number
  concurrency: number
  check: { deliveries: number; notDelivered: number; multipleAttempts: number; logsNotOne: number }
}

async function runPhase(receiver: Receiver, server: RunningServer | undefined, expected: number, drive: () => Promise<Trigger[]>, { store, maxWaitMs }: Pick<RunSettings, 'store' | 'maxWaitMs'>): Promise<PhaseResult> {
  const { arrived } = await receiver.expect(expected, maxWaitMs)
  const before = markCpu(server, receiver, store)
  const startedAt = now()
  const triggers = await drive()
  await arrived
  // A repeated attempt of an earlier phase counts towards `expected`: wait for this phase's own.
  let records = await receiver.records()
  const distinct = (r: ReceivedRecords) => new Set(ownArrivals(r, triggers).map((i) => `${r.paths[i]}:${r.contacts[i]}`)).size
  while (distinct(records) < expected) {
    if (now() - startedAt > maxWaitMs) throw new Error(`only ${distinct(records)} of ${expected} deliveries arrived within ${maxWaitMs / 1000} s`)
    await new Promise((r) => setTimeout(r, 100))
    records = await receiver.records()
  }
  const after = markCpu(server, receiver, store)
  return summarize(records, triggers, startedAt, cpuSince(before, after, expected))
}

/** One run on a fresh store: setup, the floor, the burst and (unless --no-paced) one event at a time, then the store's record. */
export async function oneRun(run: number, build: Build, ca: Awaited<ReturnType<typeof createTestCa>>, concurrency: number, settings: RunSettings): Promise<RunResult> {
  const { store, webhookCount, eventCount, pauseMs, maxWaitMs } = settings
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'))
  let fresh: FreshDatabase | undefined
  let database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }
  if (store === 'postgres') {
    fresh = await createFreshDatabase(settings.adminUrl, 'bench_webhooks')
    database = { kind: 'postgres', url: fresh.url }
  } else {
    database = { kind: 'sqlite', path: join(dir, 'bench.db') }
  }
  const caFile = join(dir, 'ca.pem')
  writeFileSync(caFile, ca.caPem)
  const receiver = await Receiver.start(ca)
  let server: RunningServer | undefined
  try {
    server = await startServer({
      mode: 'dist',
      entry: build.entry,
      nodeArgs: settings.nodeArgs,
      env: {
        DATABASE_URL: database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url,
        JWT_SECRET,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: '1000000',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        NODE_EXTRA_CA_CERTS: caFile,
        ...(settings.outboxPollMs ? { OUTBOX_POLL_MS: settings.outboxPollMs } : {}),
      },
    })
    const key = await newKey(server)
    const webhookIds = await createWebhooks(server, key, receiver, webhookCount)
    const live = server

    // Warm-up, not counted: one event through the server, one round of the floor.
    const warm = await receiver.expect(webhookCount, maxWaitMs)
    await trigger(live, key)
    await warm.arrived
    const floorClient = new Floor((i) => receiver.url(`/w/${i}`), webhookCount, concurrency, concurrency, ca.caPem)
    const warmFloor = await receiver.expect(webhookCount, maxWaitMs)
    await floorClient.send(1)
    await warmFloor.arrived

    const total = eventCount * webhookCount
    const quiet = async (phase: string) => {
      const q = await waitQuiet(settings.waitQuietS, settings.noise)
      console.log(`  run ${run}, ${phase}: machine ${q.quiet ? 'quiet' : 'still busy'} (${Math.round(q.busyPct)}% of a core) after ${q.waitedS.toFixed(0)} s`)
    }

    await quiet('floor')
    const floor = await runPhase(receiver, live, total, async () => {
      await floorClient.send(eventCount)
      return []
    }, settings)
    await floorClient.close()

    await quiet('burst')
    const idleProbe = probeRequests(live, key)
    await new Promise((r) => setTimeout(r, PROBE_IDLE_MS))
    const idleRequests = await idleProbe.stop()
    const burstProbe = probeRequests(live, key)
    const burst = await runPhase(receiver, live, total, async () => {
      const triggers: Trigger[] = []
      for (let e = 0; e < eventCount; e++) triggers.push(await trigger(live, key))
      return triggers
    }, settings)
    const requests = { idle: idleRequests, burst: await burstProbe.stop() }

    let paced: PhaseResult | undefined
    if (settings.paced) {
      await quiet('paced')
      paced = await runPhase(receiver, live, total, async () => {
        const triggers: Trigger[] = []
        for (let e = 0; e < eventCount; e++) {
          triggers.push(await trigger(live, key))
          // Closed loop: the next event once this one has reached every webhook, after a pause.
          while ((await receiver.count()) < (e + 1) * webhookCount) await new Promise((r) => setTimeout(r, 5))
          await new Promise((r) => setTimeout(r, pauseMs))
        }
        return triggers
      }, settings)
    }

    await server.stop()
    const recorded = await recordedDeliveries(database)
    const webhookIndex = new Map(webhookIds.map((id, i) => [id, i]))
    const byKey = new Map(recorded.map((d) => [`${d.webhookId}:${d.contactId}`, d]))
    burst.split = splitOf(burst, byKey, webhookIndex)
    if (paced) paced.split = splitOf(paced, byKey, webhookIndex)
    const check = {
      deliveries: recorded.length,
      notDelivered: recorded.filter((d) => !d.delivered).length,
      multipleAttempts: recorded.filter((d) => d.attempts !== 1).length,
      logsNotOne: recorded.filter((d) => d.logs !== 1).length,
    }
    for (const phase of [floor, burst, paced]) {
      if (phase) {
        delete phase.records
        delete phase.triggers
      }
    }
    return { floor, burst, requests, paced, ratio: burst.deliveriesPerSecond / floor.deliveriesPerSecond, concurrency, check }
  } finally {
    await server?.stop()
    await receiver.stop()
    await fresh?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}
