/** One run of bench:messaging: the floor, the broadcast (a, b) with the other account's requests beside it (d, e), then single sends (c). */
import autocannon from 'autocannon'
import { fetch as undiciFetch } from 'undici'
import { waitQuiet } from '../lib/load.js'
import { startServer, type RunningServer } from '../lib/server.js'
import type { Build } from './build.js'
import { benchPhoneNumber, SEGMENT, type RoutesMode } from './contacts.js'
import { cpuBetween, cpuMark, renice, stopCpuMarks, waitServerIdle, type CpuShare } from './cpu.js'
import { floorPostgres, floorSqlite, type FloorResult } from './floor.js'
import { int, log, ms, sec, sleep } from './format.js'
import { MESSAGES, type MessageMode, type TextTally } from './message.js'
import { patientAgent, probeOf, type ProbeRecord, type ProbeSpec, type ProbeStats } from './probe.js'
import { startProbes, type ProbesWhere } from './probes-apart.js'
import { DEFAULT_CONNECTION, MIXED_CONNECTIONS, MIXED_ROUTES, priceSql, routesOf, type Expected } from './routing.js'
import { JWT_SECRET, type PreparedStore, type StoreCopy } from './store.js'

export const ADMIN_TOKEN = 'bench-admin-token-0123456789'

/** What a run takes from bench:messaging's flags (main.ts reads and checks them). */
export interface RunSettings {
  store: 'sqlite' | 'postgres'
  contacts: number
  durationS: number
  rate: number
  connections: number
  warmupS: number
  intervalMs: number
  idleMs: number
  deliveryDelayMs: number
  maxWaitMs: number
  /** (e) runs: not --no-during. */
  during: boolean
  /** --probes: (d) and (e) from a process of their own (apart) or from the bench's (inline); --probe-priority: that process's nice value. */
  probes: ProbesWhere
  probePriority: number
  /** Not --shared-session: the server in a session of its own (StartOptions.ownSession). */
  ownSession: boolean
  /** --server-priority: the server's nice value (every thread), 0 as started. */
  serverPriority: number
  /** --probe-liveness: GET /healthz beside (d), at its interval: the server's answer without the store. */
  probeLiveness: boolean
  /** (c) is repeated evenly paced: --paced and not --no-paced. */
  paced: boolean
  /** Before each run, wait up to this many seconds for a second with the machine under `noise` % of a core busy. */
  waitQuietS: number
  noise: number
  /** --node-arg, for the server. */
  nodeArgs: string[]
  /** --batch-size and --concurrency as given (DISPATCH_BATCH_SIZE, DISPATCH_CONCURRENCY). */
  batchSize: string | undefined
  concurrency: string | undefined
  /** PostgreSQL's admin URL, to read the run's backends' CPU. */
  adminUrl: string
  /** --routes, and what the broadcast should come to under it (routing.ts). */
  routes: RoutesMode
  /** --message: the broadcast's text (message.ts). */
  message: MessageMode
  expected: Expected
}

// ------------------------------------------------------------------ HTTP
async function api(server: RunningServer, token: string, method: string, path: string, body?: unknown, expected?: number): Promise<any> {
  const response = await undiciFetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher: patientAgent,
  })
  const text = await response.text()
  if (response.status >= 300 || (expected !== undefined && response.status !== expected)) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

/** Rows of a query on the run's store while the server runs (`?` placeholders, made $1, $2 … for PostgreSQL). */
async function readStore(copy: StoreCopy, text: string, params: unknown[] = []): Promise<any[]> {
  if (copy.path) {
    const { default: SQLite } = await import('../../src/platform/db/sqlite-binding.js')
    const db = new SQLite(copy.path, { readonly: true })
    try {
      return db.prepare(text).all(...params)
    } finally {
      db.close()
    }
  }
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: copy.databaseUrl })
  await client.connect()
  try {
    let n = 0
    return (await client.query(text.replace(/\?/g, () => `$${++n}`), params)).rows
  } finally {
    await client.end()
  }
}

/** The segment's cached count has been refreshed (the background refresher has been by), read from the store. */
async function segmentsCounted(copy: StoreCopy): Promise<boolean> {
  const rows = await readStore(copy, 'select count(*) n from segments where count_version <> counted_version')
  return Number(rows[0].n) === 0
}

/**
 * A broadcast's recipients by the connection that took each (null: not sent) and status,
 * read from the store, with what they cost: Σ price × segments, a recipient's own segments
 * when it has a text of its own (personalised), else the message's.
 */
async function recipientsByConnection(copy: StoreCopy, broadcastId: string): Promise<{ carrier: string | null; status: string; n: number; credits: number }[]> {
  const of = `from message_recipients r join messages m on m.id = r.message_id where m.broadcast_id = ?`
  const read = async (credits: string, byCarrier = true) => {
    const carrier = byCarrier ? 'r.carrier as carrier, ' : ''
    const rows = await readStore(copy, `select ${carrier}r.status as status, count(*) as n, sum(${credits}) as credits ${of} group by ${byCarrier ? 'r.carrier, ' : ''}r.status`, [broadcastId])
    return rows.map((r) => ({ carrier: (r.carrier ?? null) as string | null, status: r.status as string, n: Number(r.n), credits: Number(r.credits) }))
  }
  try {
    return await read('r.price * coalesce(r.segments, m.segments)')
  } catch {
    // A build from before personalised messages (--commit): every recipient has the message's segments.
    try {
      return await read('r.price * m.segments')
    } catch {
      // Before carrier routes: one connection, at price 1, carried everything it sent.
      const rows = await read('m.segments', false)
      return rows.map((r) => ({ ...r, carrier: r.status === 'queued' ? null : DEFAULT_CONNECTION }))
    }
  }
}

/**
 * --routes mixed: the three simulator connections and the three routes, through the admin
 * API, then until this server runs all three (each started within a reload of its own).
 */
async function setUpRoutes(server: RunningServer, deliveryDelayMs: number): Promise<void> {
  for (const name of MIXED_CONNECTIONS) await api(server, ADMIN_TOKEN, 'POST', '/v1/admin/carriers', { name, type: 'simulator', config: { deliveryDelayMs } }, 201)
  const table = (await api(server, ADMIN_TOKEN, 'PUT', '/v1/admin/routes', { routes: MIXED_ROUTES }, 200)) as { routes: unknown[] }
  if (table.routes.length !== MIXED_ROUTES.length) throw new Error(`PUT /v1/admin/routes: ${table.routes.length} routes in force, ${MIXED_ROUTES.length} given`)
  for (const deadline = performance.now() + 30_000; ; await sleep(100)) {
    const page = (await api(server, ADMIN_TOKEN, 'GET', '/v1/admin/carriers?pageSize=100')) as { items: { name: string; state: { status: string } }[] }
    const up = page.items.filter((c) => (MIXED_CONNECTIONS as readonly string[]).includes(c.name) && c.state.status === 'up')
    if (up.length === MIXED_CONNECTIONS.length) return
    if (performance.now() > deadline) throw new Error(`the simulator connections are not all up after 30 s: ${JSON.stringify(page.items.map((c) => [c.name, c.state.status]))}`)
  }
}

// ------------------------------------------------------------------ one run
export interface RoutesCheck {
  mode: RoutesMode
  /** --message, and under personalised the expected texts by encoding and segments. */
  message: MessageMode
  texts?: TextTally
  /** The broadcast's message's segments (GET /v1/broadcasts/{id}); under personalised each recipient has its own. */
  segments: number
  /** Σ expected price × segments (plain: × the message's; personalised: × each recipient's own, computed in message.ts). */
  expectedCredits: number
  /** creditsUsed in the send's answer, and on the broadcast at completion (after any refund). */
  answerCredits: number
  finalCredits: number
  /** The sender's balance before the send less its balance at completion. */
  balanceDebited: number
  /** Σ message_recipients.price × coalesce(message_recipients.segments, messages.segments) of the broadcast's recipients, from the store. */
  storeCredits: number
  creditsOk: boolean
  /** From the store at completion, by connection name ("(none)": not sent). */
  byConnection: Record<string, { recipients: number; delivered: number; failed: number; other: number; expected: number; expectedFailing: number }>
  splitOk: boolean
}

/** The server's event_loop_stalls_total and background_slices(_over_20ms)_total by work. */
export interface LoopStallCounts {
  stalls: number
  slices: Record<string, { slices: number; over20ms: number }>
  /** event_loop_lag_seconds: samples (one per 20 ms) at or under each bucket's bound in seconds ("+Inf": all). */
  lag: Record<string, number>
}

export interface RunResult {
  floor: FloorResult
  queue: { seconds: number; answerSeconds: number; recipients: number; creditsUsed: number }
  handoff: { seconds: number; afterQueuedSeconds: number; recipientsPerSecond: number; afterQueuedRecipientsPerSecond: number }
  completion: { seconds: number; recipientsPerSecond: number; completed: boolean; delivered: number; failed: number; sent: number }
  probe: { idle: ProbeStats; queue: ProbeStats; dispatch: ProbeStats; all: ProbeStats }
  /** --probe-liveness: GET /healthz over the same spans as (d). */
  liveness?: { idle: ProbeStats; queue: ProbeStats; dispatch: ProbeStats; all: ProbeStats }
  /** (e) the other account's paced sends during (a) and (b). */
  during?: { idle: ProbeStats; queue: ProbeStats; dispatch: ProbeStats; all: ProbeStats }
  timeline: { queuedS: number; handoffS: number; completionS: number; probes: [number, number, number][] }
  /** Where (d) and (e) ran, and at what nice value when apart. */
  probes: { where: ProbesWhere; priority?: number }
  cpu: { queue: CpuShare; dispatch: CpuShare; send: CpuShare; paced?: CpuShare }
  /** From the server's start to the end of (b). */
  stalls: LoopStallCounts
  /** The event loop's lag samples from just before the send to the end of (b): at or under each bound (s), of all. */
  lag: { upTo: Record<string, number>; samples: number }
  /** (c) evenly paced, open loop (--paced). */
  paced?: ProbeStats
  /** What the broadcast cost and where its recipients went, against routing.ts's expectation. */
  routes: RoutesCheck
  send: { requests: number; rps: number; p50: number; p90: number; p99: number; max: number; mean: number; non2xx: number; errors: number; timeouts: number }
}

/** One run on fresh copies of the prepared store: the floor, then (a) to (e) on the server. */
export async function oneRun(run: number, build: Build, prepared: PreparedStore, settings: RunSettings): Promise<RunResult> {
  const { durationS, rate, connections, warmupS, intervalMs, idleMs, deliveryDelayMs, maxWaitMs, during } = settings
  const { accounts } = prepared
  const quiet = await waitQuiet(settings.waitQuietS, settings.noise)
  log(`  run ${run}: machine ${quiet.quiet ? 'quiet' : 'NOT quiet'} (${Math.round(quiet.busyPct)}% of a core busy) after waiting ${quiet.waitedS.toFixed(0)} s`)

  // The floor, on its own copy of the prepared store, with no server running.
  const floorCopy = await prepared.copy('floor')
  let floor: FloorResult
  try {
    const price = priceSql(routesOf(settings.routes))
    floor = floorCopy.path ? floorSqlite(floorCopy.path, accounts.senderAccountId, price) : await floorPostgres(floorCopy.databaseUrl, accounts.senderAccountId, price)
  } finally {
    await floorCopy.drop()
  }
  log(`  run ${run}: floor INSERT … SELECT ${int(floor.rows)} rows${settings.routes === 'mixed' ? ' with the routes\' price CASE' : ''} in ${sec(floor.seconds)}`)

  const startBare = (copy: StoreCopy) =>
    startServer({
      mode: 'dist',
      entry: build.entry,
      nodeArgs: settings.nodeArgs,
      ownSession: settings.ownSession,
      env: {
        DATABASE_URL: copy.databaseUrl,
        JWT_SECRET,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: '1000000',
        ADMIN_TOKEN,
        CARRIER: 'simulator',
        // For the event-loop stalls by background work, read after (b).
        METRICS_ENABLED: 'true',
        SIMULATOR_DELIVERY_DELAY_MS: String(deliveryDelayMs),
        ...(settings.batchSize ? { DISPATCH_BATCH_SIZE: settings.batchSize } : {}),
        ...(settings.concurrency ? { DISPATCH_CONCURRENCY: settings.concurrency } : {}),
      },
    })
  const start = async (copy: StoreCopy) => {
    const server = await startBare(copy)
    if (settings.serverPriority !== 0) log(`  the server's threads at nice ${renice(server.pid, settings.serverPriority)} (--server-priority)`)
    if (settings.routes === 'mixed') {
      try {
        await setUpRoutes(server, deliveryDelayMs)
      } catch (err) {
        await server.stop()
        throw err
      }
    }
    return server
  }
  let copy = await prepared.copy('run')
  let server = await start(copy)
  try {
    const { senderKey, senderAccountId, bystanderKey, bystanderAccountId } = accounts
    // The broadcast, then (c) twice (autocannon and paced), each with its warm-up.
    const sendRequests = 2 * (warmupS + durationS) * rate + 2000
    // Plain: the broadcast's message is one segment, Σ price over the recipients (contacts at price 1 under --routes single);
    // personalised: Σ price × each recipient's own segments.
    const broadcastCredits = settings.expected.personalised?.credits ?? settings.expected.priceSum
    await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${senderAccountId}/credits`, { amount: broadcastCredits + sendRequests }, 200)
    // (e): enough for --max-wait at --rate.
    if (during) await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${bystanderAccountId}/credits`, { amount: Math.ceil((maxWaitMs / 1000 + idleMs / 1000 + 60) * rate) }, 200)
    const segmentId = (await api(server, senderKey, 'POST', '/v1/audience/segments', { ...SEGMENT, rules: JSON.stringify(SEGMENT.rules) }, 201)) as string
    const broadcastId = (await api(server, senderKey, 'POST', '/v1/broadcasts', { name: 'Bench broadcast', message: MESSAGES[settings.message], senderId: 'Bench', segmentId }, 201)) as string
    const { segments } = (await api(server, senderKey, 'GET', `/v1/broadcasts/${broadcastId}`)) as { segments: number }
    const balanceBefore = ((await api(server, senderKey, 'GET', '/v1/account')) as { balance: number }).balance
    // Let the segment's background count and the server's other work finish first.
    for (const deadline = performance.now() + 60_000; !(await segmentsCounted(copy)) && performance.now() < deadline; ) await sleep(250)
    await waitServerIdle(server, 30_000)

    // (d), and (e) unless --no-during.
    const specs: ProbeSpec[] = [{ url: `${server.url}/v1/account`, token: bystanderKey, intervalMs, okStatus: 200 }]
    if (during) specs.push({ url: `${server.url}/v1/sms/send`, token: bystanderKey, intervalMs: 1000 / rate, okStatus: 201, send: { from: 60_000_000, content: 'Your code is 654321', senderId: 'Other' } })
    if (settings.probeLiveness) specs.push({ url: `${server.url}/healthz`, token: bystanderKey, intervalMs, okStatus: 200 })
    const probes = await startProbes(specs, settings.probes, settings.probePriority)
    await sleep(idleMs)

    // (a) the send, until every recipient is queued: when the request queues them itself,
    // the first look after its answer finds them all; when they are queued after the
    // answer, until the broadcast's message (GET /v1/sms) counts as many as the answer.
    const lagBefore = (await loopStalls(server)).lag
    const cpu0 = await cpuMark(server, copy, settings.adminUrl)
    const sendStart = performance.now()
    const started = (await api(server, senderKey, 'POST', `/v1/broadcasts/${broadcastId}/send`, {}, 202)) as { status: string; recipients: number; creditsUsed: number }
    const sendEnd = performance.now()
    const cpu1 = await cpuMark(server, copy, settings.adminUrl)
    const recipients = started.recipients
    log(`  run ${run}: (a) POST send answered in ${sec((sendEnd - sendStart) / 1000)}: ${started.status}, ${int(recipients)} recipients`)

    // (b) until every recipient is handed over, then until completed.
    let queuedAt = Number.NaN
    let cpuQueued = cpu1
    let handoffAt = Number.NaN
    let completedAt = Number.NaN
    let last: any
    let lastLog = performance.now()
    for (let poll = 0; performance.now() - sendStart < maxWaitMs; poll++) {
      last = await api(server, senderKey, 'GET', `/v1/broadcasts/${broadcastId}`)
      const now = performance.now()
      if (Number.isNaN(queuedAt)) {
        // The broadcast's message counts the recipient rows written so far; nothing else
        // is sent from this account meanwhile, so it is the newest message.
        const newest = (await api(server, senderKey, 'GET', '/v1/sms?pageSize=1')).items[0]
        if (last.status === 'completed' || (newest?.broadcastId === broadcastId && newest.recipientCount >= recipients)) {
          queuedAt = poll === 0 ? sendEnd : performance.now()
          if (poll > 0) cpuQueued = await cpuMark(server, copy, settings.adminUrl)
        }
      }
      if (Number.isNaN(handoffAt) && (last.sent >= recipients || last.status === 'completed')) handoffAt = now
      if (last.status === 'completed') {
        completedAt = now
        break
      }
      if (now - lastLog > 10_000) {
        lastLog = now
        log(`    ${((now - sendStart) / 1000).toFixed(0)} s: sent ${int(last.sent)}, delivered ${int(last.delivered)}, failed ${int(last.failed)} of ${int(recipients)}`)
      }
      await sleep(100)
    }
    const cpu2 = await cpuMark(server, copy, settings.adminUrl)
    const stalls = await loopStalls(server)
    const dispatchEnd = Number.isNaN(completedAt) ? performance.now() : completedAt
    const records = await probes.stop()
    const probe = records[0]!
    const duringSender = during ? records[1] : undefined
    const liveness = settings.probeLiveness ? records.at(-1) : undefined
    // What the broadcast cost and where its recipients went, before (c) sends anything more.
    const routesCheck = await checkRoutes(settings, server, copy, senderKey, broadcastId, { segments, balanceBefore, answerCredits: started.creditsUsed, finalCredits: last.creditsUsed })
    const queueS = (queuedAt - sendStart) / 1000
    // A probe's figures before the send, during (a), during (b), and over both.
    const spans = (record: ProbeRecord) => ({
      idle: record.stats(0, sendStart),
      queue: record.stats(sendStart, queuedAt),
      dispatch: record.stats(queuedAt, dispatchEnd),
      all: record.stats(sendStart, dispatchEnd),
    })
    const handoffS = (handoffAt - sendStart) / 1000
    const completionS = (dispatchEnd - sendStart) / 1000
    log(`  run ${run}: (a) all queued after ${sec(queueS)}; (b) every recipient handed over after ${sec(handoffS)}, ${Number.isNaN(completedAt) ? `NOT completed after ${sec(completionS)}` : `completed after ${sec(completionS)}`} (from the send)`)

    // (c) single sends at a fixed rate, once the broadcast's work has settled; if it did
    // not complete within --max-wait, on a fresh copy, so that it does not run beside (c).
    if (Number.isNaN(completedAt)) {
      log(`  run ${run}: the broadcast did not complete within --max-wait; (c) runs on a fresh copy`)
      await stopCpuMarks()
      await server.stop()
      await copy.drop()
      copy = await prepared.copy('run')
      server = await start(copy)
      await api(server, ADMIN_TOKEN, 'POST', `/v1/admin/accounts/${senderAccountId}/credits`, { amount: sendRequests }, 200)
    }
    await waitServerIdle(server, 60_000)
    let n = 0
    const body = () => JSON.stringify({ recipients: [benchPhoneNumber(50_000_000 + n++)], content: 'Your code is 123456', senderId: 'Bench' })
    const sendOptions = (seconds: number): autocannon.Options => ({
      url: server.url,
      connections,
      overallRate: rate,
      ignoreCoordinatedOmission: true,
      duration: seconds,
      timeout: 10,
      requests: [
        {
          method: 'POST',
          path: '/v1/sms/send',
          headers: { authorization: `Bearer ${senderKey}`, 'content-type': 'application/json' },
          setupRequest: (request) => ({ ...request, body: body() }),
        },
      ],
    })
    if (warmupS > 0) await autocannon(sendOptions(warmupS))
    const cpu3 = await cpuMark(server, copy, settings.adminUrl)
    const result = await autocannon(sendOptions(durationS))
    const cpu4 = await cpuMark(server, copy, settings.adminUrl)
    log(`  run ${run}: (c) autocannon: ${int(result.requests.total)} sends in ${result.duration} s: p50 ${ms(result.latency.p50)}, p99 ${ms(result.latency.p99)}, max ${ms(result.latency.max)}`)

    // (c) again, evenly paced: autocannon's rate lets each connection send its share of a
    // second back to back at the start of the second, so 10 connections arrive as bursts
    // of 10 at a time; here one request leaves every 1000/rate ms, open loop.
    let paced: ProbeStats | undefined
    let cpuPaced: CpuShare | undefined
    if (settings.paced) {
      await waitServerIdle(server, 30_000)
      // Numbers after autocannon's, which has finished.
      const sender = probeOf({ url: `${server.url}/v1/sms/send`, token: senderKey, intervalMs: 1000 / rate, okStatus: 201, send: { from: 50_000_000 + n, content: 'Your code is 123456', senderId: 'Bench' } })
      sender.start()
      await sleep(warmupS * 1000)
      const from = performance.now()
      const cpu5 = await cpuMark(server, copy, settings.adminUrl)
      await sleep(durationS * 1000)
      const to = performance.now()
      const cpu6 = await cpuMark(server, copy, settings.adminUrl)
      await sender.stop()
      paced = sender.stats(from, to)
      cpuPaced = cpuBetween(cpu5, cpu6)
      log(`  run ${run}: (c) paced: ${int(paced.count)} sends: p50 ${ms(paced.p50)}, p99 ${ms(paced.p99)}, max ${ms(paced.max)}${paced.failed ? `, FAILED ${paced.failed}` : ''}`)
    }

    return {
      routes: routesCheck,
      floor,
      queue: { seconds: queueS, answerSeconds: (sendEnd - sendStart) / 1000, recipients, creditsUsed: started.creditsUsed },
      handoff: {
        seconds: handoffS,
        afterQueuedSeconds: (handoffAt - queuedAt) / 1000,
        recipientsPerSecond: Number.isNaN(handoffS) ? last.sent / completionS : recipients / handoffS,
        afterQueuedRecipientsPerSecond: recipients / ((handoffAt - queuedAt) / 1000),
      },
      completion: {
        seconds: completionS,
        recipientsPerSecond: Number.isNaN(completedAt) ? (last.delivered + last.failed) / completionS : recipients / completionS,
        completed: !Number.isNaN(completedAt),
        delivered: last.delivered,
        failed: last.failed,
        sent: last.sent,
      },
      timeline: {
        queuedS: queueS,
        handoffS,
        completionS,
        // Every probe: when it was sent (s from the send) and how long it took (ms).
        probes: probe.samples.map((p) => [Number(((p.sentAt - sendStart) / 1000).toFixed(3)), Number(p.ms.toFixed(1)), p.status]),
      },
      probes: { where: settings.probes, ...(probes.priority === undefined ? {} : { priority: probes.priority }) },
      probe: spans(probe),
      ...(liveness ? { liveness: spans(liveness) } : {}),
      ...(duringSender
        ? {
            during: spans(duringSender),
          }
        : {}),
      stalls,
      lag: lagBetween(lagBefore, stalls.lag),
      cpu: { queue: cpuBetween(cpu0, cpuQueued), dispatch: cpuBetween(cpuQueued, cpu2), send: cpuBetween(cpu3, cpu4), ...(cpuPaced ? { paced: cpuPaced } : {}) },
      ...(paced ? { paced } : {}),
      send: {
        requests: result.requests.total,
        rps: result.requests.total / result.duration,
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
        mean: result.latency.mean,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
      },
    }
  } finally {
    await stopCpuMarks()
    await server.stop()
    await copy.drop()
  }
}

function lagBetween(before: Record<string, number>, after: Record<string, number>): RunResult['lag'] {
  const upTo = Object.fromEntries(Object.entries(after).map(([le, n]) => [le, n - (before[le] ?? 0)]))
  return { upTo, samples: upTo['+Inf'] ?? 0 }
}

/** The server's event-loop stalls over 20 ms since it started, and its background slices by work with those during which one happened (LoopStalls). */
async function loopStalls(server: RunningServer): Promise<LoopStallCounts> {
  const text = await (await undiciFetch(`${server.url}/metrics`, { dispatcher: patientAgent })).text()
  const counts: LoopStallCounts = { stalls: 0, slices: {}, lag: {} }
  for (const line of text.split('\n')) {
    const lag = /^event_loop_lag_seconds_bucket\{le="([^"]+)"\} (\S+)/.exec(line)
    if (lag) counts.lag[lag[1]!] = Number(lag[2])
    const stalls = /^event_loop_stalls_total (\S+)/.exec(line)
    if (stalls) counts.stalls = Number(stalls[1])
    const slice = /^background_slices(_over_20ms)?_total\{work="([^"]+)"\} (\S+)/.exec(line)
    if (slice) {
      const entry = (counts.slices[slice[2]!] ??= { slices: 0, over20ms: 0 })
      if (slice[1]) entry.over20ms = Number(slice[3])
      else entry.slices = Number(slice[3])
    }
  }
  return counts
}

/** The credits the broadcast took and the recipients per connection, against routing.ts's expectation. */
async function checkRoutes(
  settings: RunSettings,
  server: RunningServer,
  copy: StoreCopy,
  senderKey: string,
  broadcastId: string,
  seen: { segments: number; balanceBefore: number; answerCredits: number; finalCredits: number },
): Promise<RoutesCheck> {
  const { expected } = settings
  const balanceAfter = ((await api(server, senderKey, 'GET', '/v1/account')) as { balance: number }).balance
  const rows = await recipientsByConnection(copy, broadcastId)
  const byConnection: RoutesCheck['byConnection'] = {}
  for (const [name, t] of Object.entries(expected.byConnection)) byConnection[name] = { recipients: 0, delivered: 0, failed: 0, other: 0, expected: t.recipients, expectedFailing: t.failing }
  let storeCredits = 0
  for (const row of rows) {
    const entry = (byConnection[row.carrier ?? '(none)'] ??= { recipients: 0, delivered: 0, failed: 0, other: 0, expected: 0, expectedFailing: 0 })
    entry.recipients += row.n
    if (row.status === 'delivered') entry.delivered += row.n
    else if (row.status === 'failed') entry.failed += row.n
    else entry.other += row.n
    storeCredits += row.credits
  }
  const expectedCredits = expected.personalised ? expected.personalised.credits : expected.priceSum * seen.segments
  const balanceDebited = seen.balanceBefore - balanceAfter
  return {
    mode: settings.routes,
    message: settings.message,
    ...(expected.personalised ? { texts: expected.personalised.texts } : {}),
    segments: seen.segments,
    expectedCredits,
    answerCredits: seen.answerCredits,
    finalCredits: seen.finalCredits,
    balanceDebited,
    storeCredits,
    creditsOk: [seen.answerCredits, seen.finalCredits, balanceDebited, storeCredits].every((c) => c === expectedCredits),
    byConnection,
    splitOk: Object.values(byConnection).every((c) => c.recipients === c.expected),
  }
}
