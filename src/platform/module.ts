import type { FastifyPluginAsync } from 'fastify'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { Clock } from './clock.js'
import type { ChangeSignals } from './db/change-signals.js'
import type { Store } from './db/connect.js'
import type { Leases } from './lease.js'
import type { Metrics } from './metrics/registry.js'
import type { EventDemand } from './outbox/demand.js'
import type { OutboxRelay } from './outbox/relay.js'

/**
 * The shared objects the composition root (app.ts) builds once. Each module's create
 * function names the ones it uses, `Pick<PlatformDeps, ...>`, so its dependencies read
 * from its signature and are passed by name, never by position.
 */
export interface PlatformDeps {
  store: Store
  clock: Clock
  /** The app's logger: each part of a module logs through a child naming its component. */
  logger: Logger
  metrics: Metrics
  leases: Leases
  relay: OutboxRelay
  /** Whether anything reads an event type for an account: producers ask, consumers answer. */
  demand: EventDemand
  /** Changes other nodes (and connections) committed, for caches. */
  signals: ChangeSignals
  /** Cluster mode only. */
  redis: Redis | undefined
}

/**
 * What every module's `createX(deps, options)` returns, besides what it offers other
 * modules and the composition root. app.ts registers `routes` as a Fastify plugin,
 * starts every module once all routes are registered (after the outbox relay, before the
 * leases' first sweep), and stops them in the same order while the store is still open.
 */
export interface AppModule {
  /** The module's HTTP routes and hooks. */
  readonly routes: FastifyPluginAsync
  /** Starts its background work; leased work is handed to the leases here. */
  start(): Promise<void>
  /** Stops its background work, ending or handing back what it holds. */
  stop(): Promise<void>
}
