import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../../platform/background-loop.js'
import type { DB } from '../../../platform/db/schema.js'
import type { Carrier, CarrierHandlers, CarrierState } from '../carriers/carrier.js'
import { listConnections, readRoutes, readVersion, type StoredConnection } from './queries.js'
import { RouteTable, type Route } from './route-table.js'
import { routesInForce } from './service.js'

/** Builds the carrier a stored connection describes (not started). */
export type ConnectionFactory = (connection: StoredConnection) => Carrier

export interface CarrierConnectionsOptions {
  /** How often the configuration version is read: a change made on another node applies within this. */
  pollMs: number
}

interface Running {
  connection: StoredConnection
  carrier: Carrier
  /** Type and config as JSON: a change means a new carrier. */
  fingerprint: string
}

/** The carriers a recipient's message may be handed to, in the order its route tries them. */
export interface RouteChoice {
  route: Route
  /** Enabled connections of the route, in order; a down one is still listed (the dispatcher skips it). */
  carriers: Carrier[]
}

/**
 * The carrier connections this node runs, and the route table in force. The environment's
 * connection (`default`) always runs; stored ones start, restart with a changed config
 * and stop as operators change them: at once on the node that took the change, within
 * `pollMs` on the others (each reads one version number per poll).
 */
export class CarrierConnections {
  private readonly running = new Map<string, Running>()
  private readonly byName = new Map<string, Carrier>()
  private table: RouteTable
  private version: number | undefined
  private reloading: Promise<void> | undefined
  private reloadAgain = false
  private readonly poll: BackgroundLoop

  constructor(
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
    private readonly environment: { connection: StoredConnection; carrier: Carrier },
    private readonly build: ConnectionFactory,
    private readonly handlersFor: (carrier: Carrier) => CarrierHandlers,
    options: CarrierConnectionsOptions,
  ) {
    this.byName.set(environment.connection.name, environment.carrier)
    this.table = new RouteTable(routesInForce([]))
    this.poll = new BackgroundLoop(() => this.reload(false), { pacing: 'fixed-rate', intervalMs: options.pollMs, logger, errorMessage: 'reading the carrier configuration failed; retrying' })
  }

  async start(): Promise<void> {
    await this.environment.carrier.start(this.handlersFor(this.environment.carrier))
    await this.reload(true)
    this.poll.start()
  }

  async stop(): Promise<void> {
    await this.poll.stop()
    await this.reloading
    await Promise.all([...this.running.values()].map(({ carrier }) => carrier.stop()))
    this.running.clear()
    await this.environment.carrier.stop()
  }

  /** A change was committed on this node: apply it now rather than at the next poll. */
  changed(): void {
    this.reload(true).catch((err: unknown) => this.logger.error({ err }, 'applying a carrier configuration change failed; the next poll retries'))
  }

  /** The route a message of this account to this number takes, and its enabled carriers in order. */
  choose(accountId: string, phoneNumber: string): RouteChoice {
    // The table always has a global "+" route: PUT refuses one without, and none stored means `+ -> [default]`.
    const route = this.table.choose(accountId, phoneNumber)!
    const carriers: Carrier[] = []
    for (const name of route.carriers) {
      const carrier = this.byName.get(name)
      if (carrier !== undefined) carriers.push(carrier)
    }
    return { route, carriers }
  }

  get routes(): RouteTable {
    return this.table
  }

  /** Every carrier running here, the environment's first. */
  all(): Carrier[] {
    return [this.environment.carrier, ...[...this.running.values()].map(({ carrier }) => carrier)]
  }

  /** The carrier a stored connection runs as here, if it runs. */
  runningById(id: string): Carrier | undefined {
    return this.running.get(id)?.carrier
  }

  /** The connection's name, for the carrier that took a part. */
  nameOf(carrier: Carrier): string {
    for (const [name, running] of this.byName) if (running === carrier) return name
    return carrier.connection
  }

  stateOf(connection: StoredConnection): CarrierState {
    const carrier = connection.id === this.environment.connection.id ? this.environment.carrier : this.running.get(connection.id)?.carrier
    if (carrier === undefined || !connection.enabled) {
      return { status: connection.enabled ? 'connecting' : 'disabled', since: new Date(connection.updatedAt), inFlight: 0, sentLastMinute: 0, lastError: null }
    }
    return carrier.state?.() ?? { status: 'up', since: new Date(connection.createdAt), inFlight: 0, sentLastMinute: 0, lastError: null }
  }

  /** One reload at a time; a request during one runs another after it. */
  private reload(force: boolean): Promise<void> {
    if (this.reloading) {
      this.reloadAgain ||= force
      return this.reloading
    }
    this.reloading = this.apply(force).finally(() => {
      this.reloading = undefined
      if (this.reloadAgain) {
        this.reloadAgain = false
        void this.reload(true)
      }
    })
    return this.reloading
  }

  private async apply(force: boolean): Promise<void> {
    const version = await readVersion(this.db)
    if (!force && version === this.version) return
    const [connections, routes] = await Promise.all([listConnections(this.db), readRoutes(this.db)])
    const wanted = new Map(connections.filter((c) => c.enabled).map((c) => [c.id, c]))
    const stopping: Promise<void>[] = []
    for (const [id, running] of this.running) {
      const next = wanted.get(id)
      if (next !== undefined && fingerprintOf(next) === running.fingerprint) {
        running.connection = next
        continue
      }
      this.running.delete(id)
      stopping.push(running.carrier.stop().catch((err: unknown) => this.logger.error({ err, connection: running.connection.name }, 'stopping a carrier connection failed')))
    }
    for (const [id, connection] of wanted) {
      if (this.running.has(id)) continue
      const carrier = this.build(connection)
      await carrier.start(this.handlersFor(carrier))
      this.running.set(id, { connection, carrier, fingerprint: fingerprintOf(connection) })
      this.logger.info({ connection: connection.name, type: connection.type }, 'carrier connection started')
    }
    this.byName.clear()
    this.byName.set(this.environment.connection.name, this.environment.carrier)
    for (const { connection, carrier } of this.running.values()) this.byName.set(connection.name, carrier)
    this.table = new RouteTable(routesInForce(routes))
    this.version = version
    await Promise.all(stopping)
  }
}

function fingerprintOf(connection: StoredConnection): string {
  return JSON.stringify([connection.type, connection.config])
}
