import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { systemClock, type Clock } from './platform/clock.js'
import type { Config } from './platform/config.js'
import { openChangeSignals } from './platform/db/change-signals.js'
import { openStore, type Store } from './platform/db/connect.js'
import { migrateToLatest } from './platform/db/migrations/index.js'
import { installAuth } from './platform/http/auth.js'
import { answerClientError, installClientErrors } from './platform/http/client-errors.js'
import { installDashboard } from './platform/http/dashboard.js'
import { installDraining } from './platform/http/draining.js'
import { installErrorHandling, sendProblem } from './platform/http/error-handler.js'
import { installHealth } from './platform/http/health.js'
import { installMethodNotAllowed } from './platform/http/method-not-allowed.js'
import { installOpenApi } from './platform/http/openapi.js'
import { installRateLimit } from './platform/http/rate-limit.js'
import { installValidation } from './platform/http/validation.js'
import { Leases } from './platform/lease.js'
import { installMetrics } from './platform/metrics/http.js'
import { Metrics } from './platform/metrics/registry.js'
import { installStoreMetrics } from './platform/metrics/store.js'
import { createLogger } from './platform/logger.js'
import { NotFound } from './platform/problems.js'
import { OutboxRelay } from './platform/outbox/relay.js'
import { createAccounts } from './modules/accounts/index.js'
import { createAudience } from './modules/audience/index.js'
import { createKeys } from './modules/keys/index.js'
import { createMessaging, DEFAULT_BROADCAST_QUEUE, type BroadcastQueueOptions } from './modules/messaging/index.js'
import { createWebhooks, type Webhooks } from './modules/webhooks/index.js'
import { createPush, type BusyProbe, type Push } from './modules/push/index.js'
import type { AppModule, PlatformDeps } from './platform/module.js'
import { CombinedDemand } from './platform/outbox/demand.js'

/** What the composition root built, for main.ts and tests. */
export interface Platform {
  config: Config
  store: Store
  relay: OutboxRelay
  /** What the relay's consumers read: a consumer subscribed to the relay adds its demand here, or per-recipient events are not written for it. */
  demand: CombinedDemand
  leases: Leases
  webhooks: Webhooks
  push: Push
  clock: Clock
  logger: Logger
}

declare module 'fastify' {
  interface FastifyInstance {
    platform: Platform
  }
}

export interface BuildOptions {
  clock?: Clock
  logger?: Logger
  /**
   * Tests only: a CA that webhook deliveries trust besides Node's own (a process started
   * without NODE_EXTRA_CA_CERTS cannot add one later).
   */
  webhookCa?: string
  /** Tests only: a CA that HTTP carrier connections (twilio) trust besides Node's own. */
  carrierCa?: string
  /** Tests only: how busy PUSH_COALESCE_WRITES=auto finds the node (by default, its event loop's utilization). */
  pushBusyProbe?: BusyProbe
  /** Tests only: the chunks a broadcast's recipients are queued in (by default, as the store suits). */
  broadcastQueue?: BroadcastQueueOptions
}

// Found as startWorker finds a thread's file: beside this one, as built (.js) or run from
// the sources (.ts). A URL because the store's worker threads import it too.
const MESSAGING_SQLITE_FUNCTIONS = new URL(`./modules/messaging/sql-functions.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href

/**
 * The composition root: opens the store, builds every shared object once and hands
 * each module the dependencies it names. Tests call it too.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const clock = options.clock ?? systemClock
  const logger = options.logger ?? createLogger(config)
  const store = openStore(config.database, logger, { sqliteFunctions: [MESSAGING_SQLITE_FUNCTIONS] })
  await migrateToLatest(store.db, store.dialect.name)
  const redis = config.redisUrl ? new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }) : undefined
  // One registry per app: tests build several apps in one process.
  const metrics = new Metrics(logger.child({ component: 'metrics' }), { enabled: config.metricsEnabled ?? false })
  installStoreMetrics(metrics, store.waits)

  const relay = new OutboxRelay({
    store,
    logger: logger.child({ component: 'outbox' }),
    clock,
    pollMs: config.outboxPollMs,
    retentionMs: config.outboxRetentionHours * 3_600_000,
    metrics,
  })
  // SQLite: writes by other connections (data_version); PostgreSQL: LISTEN/NOTIFY on a connection of its own.
  const signals = openChangeSignals(config.database, store.db, logger.child({ component: 'change-signals' }), config.nodeId)
  const leases = new Leases(store.db, store.dialect, clock, logger.child({ component: 'leases' }), {
    nodeId: config.nodeId,
    ttlMs: config.leaseTtlMs,
    reclaimForeignAtStart: config.database.kind === 'sqlite',
  })
  // Consumers that read per-recipient events (webhooks) add their demand here.
  const demand = new CombinedDemand()
  const deps: PlatformDeps = { store, clock, logger, metrics, leases, relay, demand, signals, redis }

  const accounts = createAccounts(deps, {
    jwtSecret: config.jwtSecret,
    allowSignup: config.allowSignup,
    signupCredits: config.signupCredits,
    passwordHashCost: config.passwordHashCost,
    loginAttemptsPerMinute: config.loginAttemptsPerMinute,
    adminEnabled: config.adminToken !== undefined,
  })
  const keys = createKeys(deps, { usageFlushMs: config.keyUsageFlushMs, cacheTtlMs: config.keyCacheTtlMs })
  const audience = createAudience(deps, {
    imports: { maxBytes: config.importMaxBytes, batchSize: 2000, parserThreads: config.importParserThreads },
    segmentCounts: {
      settleMs: config.segmentCountSettleMs,
      maxStaleMs: config.segmentCountMaxStaleMs,
      pollMs: Math.min(1000, config.segmentCountSettleMs),
    },
  })
  const webhooks = createWebhooks(deps, {
    timeoutMs: config.webhookTimeoutMs,
    retryScheduleMs: config.webhookRetryScheduleMs,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
    logRetentionDays: config.webhookLogRetentionDays,
    ...(options.webhookCa ? { ca: options.webhookCa } : {}),
  })
  demand.add(webhooks.demand)
  const messaging = createMessaging(deps, {
    carrier: config.carrier,
    simulatorDeliveryDelayMs: config.simulatorDeliveryDelayMs,
    ...(config.smppUrl ? { smpp: { url: config.smppUrl, window: config.smppWindow, maxPerSecond: config.smppMaxPerSecond } } : {}),
    receiptTimeoutHours: config.receiptTimeoutHours,
    adminEnabled: config.adminToken !== undefined,
    publicUrl: config.publicUrl,
    carrierDownAfterMs: config.carrierDownAfterMs,
    carrierGiveUpAfterMs: config.carrierGiveUpAfterMs,
    leaseTtlMs: config.leaseTtlMs,
    ...(options.carrierCa ? { carrierCa: options.carrierCa } : {}),
    // SQLite's recording transactions hold the one write lock that every request's write
    // waits for: smaller batches shorten that wait (other accounts' sends p99 53 → 36 ms,
    // medians of 3) for a little of the dispatch rate (8,645 → 8,253 recipients/s).
    dispatchBatchSize: config.dispatchBatchSize ?? (config.database.kind === 'postgres' ? 500 : 250),
    dispatchConcurrency: config.dispatchConcurrency ?? (config.database.kind === 'postgres' ? 4 : 2),
    // With simulators alone a batch waits on nothing but the store. On PostgreSQL, one at a
    // time against four (1,000,000 contacts, medians of 3): another account's requests
    // during a broadcast's hand-off p99 31 ms against 72 ms, its sends 46 ms against
    // 145 ms, the same completion rate, and 8 % less CPU per recipient (docs/benchmarks.md).
    dispatchConcurrencyInProcess: config.dispatchConcurrency ?? (config.database.kind === 'postgres' ? 1 : 2),
    // The queueing's chunks and the dispatch batches share the store (SQLite's writer
    // thread, PostgreSQL's table and cores): with one batch beside them, a broadcast is all
    // queued in about half the time, and is handed over no later.
    dispatchConcurrencyWhileQueueing: 1,
    // On SQLite a chunk's transaction holds the one write lock, and a request that writes
    // waits for it: chunks start at 2,000 contacts and grow to 4,000 (another account's
    // sends during queueing had p99 35 ms against 44 ms with 8,000, and a million were
    // queued in 5.9 s against 5.3 s). PostgreSQL locks rows, not the store: its chunks grow
    // to 100,000 contacts, a twentieth of the transactions. There the node queueing a
    // broadcast hands it over once all is queued: at a million, queued in 12 s against
    // 16 s, completion unchanged, and another account's requests meanwhile p99 23 ms
    // (median of 3) against 66-96 ms (2 runs); on SQLite, whose chunks go ahead of the dispatcher's statements,
    // it made no difference (docs/benchmarks.md).
    broadcastQueue:
      options.broadcastQueue ??
      (config.database.kind === 'postgres'
        ? { chunkSize: DEFAULT_BROADCAST_QUEUE.chunkSize, maxChunkSize: 100_000, handOverWhileQueueing: false }
        : { chunkSize: 2_000, maxChunkSize: 4_000 }),
  })
  const push = createPush(deps, {
    jwtSecret: config.jwtSecret,
    corsOrigins: config.pushCorsOrigins,
    pingIntervalMs: config.pushPingIntervalMs,
    coalesceWrites: config.pushCoalesceWrites ?? 'auto',
    ...(options.pushBusyProbe ? { busyProbe: options.pushBusyProbe } : {}),
    history: { historySize: config.pushHistorySize, historyTtlS: config.pushHistoryTtlS },
    nodeId: config.nodeId,
  })
  // Started and stopped in this order: what produces work (imports, sends) stops before
  // what consumes it (webhook deliveries, push streams).
  const modules: AppModule[] = [accounts, keys, audience, messaging, webhooks, push]

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    // Starting takes what it takes: the first sweep settles the work an earlier run left
    // claimed (a million broadcast recipients after a crash, say), on a machine that may be
    // busy. Fastify's default of 10 s for plugins and onReady hooks would refuse to start
    // then, and a supervisor restarting it would hit the same wall each time.
    pluginTimeout: 0,
    // Long enough for any id a client may send; a longer one is simply not found.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 8192 },
    // A path that is not valid percent-encoding names nothing: 404, as problem+json.
    frameworkErrors: (_error, request, reply) => {
      sendProblem(reply, new NotFound('resource'), request.url.split('?')[0])
    },
    // What Node refuses before there is a request (431, a malformed request line) is problem+json too.
    clientErrorHandler: answerClientError,
    // installClientErrors refuses a missing Host itself, as problem+json rather than Node's empty 400.
    http: { requireHostHeader: false },
    // installDraining refuses requests that arrive while closing, as problem+json.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.decorate('platform', { config, store, relay, demand, leases, webhooks, push, clock, logger })

  // JSON only, unless a route's module adds a parser of its own (CSV import).
  app.removeContentTypeParser('text/plain')
  installValidation(app)
  // Before any route is added: it learns each one as it is.
  installErrorHandling(app, { methodNotAllowed: installMethodNotAllowed(app) })
  installClientErrors(app)
  installDraining(app)
  installAuth(app, {
    verifyApiKey: keys.verifyApiKey,
    verifySession: accounts.verifySession,
    adminToken: config.adminToken,
  })
  await installRateLimit(app, { perSecond: config.rateLimitPerSecond, redis })
  await installOpenApi(app)
  installHealth(app, store)
  installMetrics(app, metrics, { token: config.metricsToken })
  await installDashboard(app)

  for (const module of modules) await app.register(module.routes)

  app.addHook('onReady', async () => {
    relay.start()
    await signals.start()
    for (const module of modules) await module.start()
    // After every module has handed over its leased work: the first sweep settles what an
    // earlier run left behind.
    await leases.start()
  })
  app.addHook('onClose', async () => {
    for (const module of modules) await module.stop()
    await leases.stop()
    await relay.stop()
    await signals.stop()
    redis?.disconnect()
    await store.close()
    metrics.stop()
  })
  return app
}
