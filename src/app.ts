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
import { accountsRoutes, createSessionSigner } from './modules/accounts/index.js'
import { audienceRoutes, ContactImporter, SegmentCountCache } from './modules/audience/index.js'
import { KeyCache, KeyUsageRecorder, keysRoutes, verifyApiKey } from './modules/keys/index.js'
import { DEFAULT_BROADCAST_QUEUE, Messaging } from './modules/messaging/index.js'
import { Webhooks } from './modules/webhooks/index.js'
import { Push, RedisPushBroker, StorePushBroker } from './modules/push/index.js'
import { CombinedDemand } from './platform/outbox/demand.js'

/** What the composition root built, for main.ts and tests. */
export interface Platform {
  config: Config
  store: Store
  relay: OutboxRelay
  segmentCounts: SegmentCountCache
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
}

/**
 * The composition root: opens the store, builds every shared object once and hands
 * each module the dependencies it names. Tests call it too.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const clock = options.clock ?? systemClock
  const logger = options.logger ?? createLogger(config)
  const store = openStore(config.database, logger)
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
  const usage = new KeyUsageRecorder(store.db, logger.child({ component: 'key-usage' }), config.keyUsageFlushMs)
  const sessions = createSessionSigner(config.jwtSecret, clock)
  // SQLite: writes by other connections (data_version); PostgreSQL: LISTEN/NOTIFY on a connection of its own.
  const changeSignals = openChangeSignals(config.database, store.db, logger.child({ component: 'change-signals' }), config.nodeId)
  const keyCache = new KeyCache(changeSignals, config.keyCacheTtlMs)
  const keysDeps = { db: store.db, dialect: store.dialect, clock, usage, cache: keyCache, signals: changeSignals }
  // Consumers that read per-recipient events (webhooks) add their demand here.
  const eventDemand = new CombinedDemand()
  const audienceDeps = { db: store.db, dialect: store.dialect, clock, readLong: store.readLong, demand: eventDemand }
  const segmentCounts = new SegmentCountCache(audienceDeps, logger.child({ component: 'segment-counts' }), {
    settleMs: config.segmentCountSettleMs,
    maxStaleMs: config.segmentCountMaxStaleMs,
    pollMs: Math.min(1000, config.segmentCountSettleMs),
  })
  const leases = new Leases(store.db, store.dialect, clock, logger.child({ component: 'leases' }), {
    nodeId: config.nodeId,
    ttlMs: config.leaseTtlMs,
    reclaimForeignAtStart: config.database.kind === 'sqlite',
  })
  const importer = new ContactImporter(
    audienceDeps,
    logger.child({ component: 'contact-import' }),
    { maxBytes: config.importMaxBytes, batchSize: 2000, parserThreads: config.importParserThreads },
    leases,
    metrics,
  )
  const webhooks = new Webhooks(store, clock, leases, relay, metrics, logger.child({ component: 'webhooks' }), {
    timeoutMs: config.webhookTimeoutMs,
    retryScheduleMs: config.webhookRetryScheduleMs,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
    logRetentionDays: config.webhookLogRetentionDays,
    ...(options.webhookCa ? { ca: options.webhookCa } : {}),
  })
  eventDemand.add(webhooks.demand)
  const messaging = new Messaging(store, clock, leases, eventDemand, metrics, logger.child({ component: 'messaging' }), {
    carrier: config.carrier,
    simulatorDeliveryDelayMs: config.simulatorDeliveryDelayMs,
    ...(config.smppUrl ? { smpp: { url: config.smppUrl, window: config.smppWindow, maxPerSecond: config.smppMaxPerSecond } } : {}),
    receiptTimeoutHours: config.receiptTimeoutHours,
    dispatchBatchSize: config.dispatchBatchSize,
    dispatchConcurrency: config.dispatchConcurrency ?? (config.database.kind === 'postgres' ? 4 : 2),
    // On SQLite a chunk's transaction holds the one write lock, and a request that writes
    // waits for it: 2,000 contacts keep that wait to a few milliseconds.
    broadcastQueue: { chunkSize: config.database.kind === 'postgres' ? DEFAULT_BROADCAST_QUEUE.chunkSize : 2_000 },
  })
  const pushHistory = { historySize: config.pushHistorySize, historyTtlS: config.pushHistoryTtlS }
  // Cluster mode: history in Redis Streams and fan-out through Redis; embedded: the store and this process.
  const pushBroker =
    redis
      ? new RedisPushBroker(redis, { nodeId: config.nodeId, ...pushHistory })
      : new StorePushBroker(store, clock, logger.child({ component: 'push-history' }), pushHistory)
  const push = new Push(pushBroker, clock, logger.child({ component: 'push' }), {
    jwtSecret: config.jwtSecret,
    corsOrigins: config.pushCorsOrigins,
    pingIntervalMs: config.pushPingIntervalMs,
    coalesceWrites: config.pushCoalesceWrites ?? 'auto',
  }, metrics)
  const accountsDeps = { db: store.db, clock, sessions, allowSignup: config.allowSignup, signupCredits: config.signupCredits }

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
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
  app.decorate('platform', { config, store, relay, segmentCounts, leases, webhooks, push, clock, logger })

  // JSON only, unless a route's module adds a parser of its own (CSV import).
  app.removeContentTypeParser('text/plain')
  installValidation(app)
  installErrorHandling(app)
  installClientErrors(app)
  installDraining(app)
  installAuth(app, {
    verifyApiKey: (rawKey) => verifyApiKey(keysDeps, rawKey),
    verifySession: async (token) => {
      const claims = await sessions.verify(token)
      return claims && { kind: 'session', accountId: claims.accountId, userId: claims.userId }
    },
    adminToken: config.adminToken,
  })
  await installRateLimit(app, { perSecond: config.rateLimitPerSecond, redis })
  await installOpenApi(app)
  installHealth(app, store)
  installMetrics(app, metrics, { token: config.metricsToken })
  await installDashboard(app)

  await app.register(accountsRoutes, {
    deps: accountsDeps,
    loginAttemptsPerMinute: config.loginAttemptsPerMinute,
    adminEnabled: config.adminToken !== undefined,
  })
  await app.register(keysRoutes, { deps: keysDeps })
  await app.register(audienceRoutes, { deps: audienceDeps, importer })
  await messaging.register(app)
  await webhooks.register(app)
  await push.register(app)

  app.addHook('onReady', async () => {
    relay.start()
    await changeSignals.start()
    usage.start()
    segmentCounts.start()
    await importer.start()
    await messaging.start()
    webhooks.start()
    await push.start()
    // After every kind of leased work is registered: the first sweep settles what an
    // earlier run left behind.
    await leases.start()
  })
  app.addHook('onClose', async () => {
    await importer.stop()
    await messaging.stop()
    await webhooks.stop()
    await push.stop()
    await leases.stop()
    await relay.stop()
    await usage.stop()
    await changeSignals.stop()
    await segmentCounts.stop()
    redis?.disconnect()
    await store.close()
    metrics.stop()
  })
  return app
}
