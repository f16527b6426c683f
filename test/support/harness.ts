import type { FastifyInstance } from 'fastify'
import { pino, type Logger } from 'pino'
import { buildApp, type BuildOptions } from '../../src/app.js'
import type { Clock } from '../../src/platform/clock.js'
import type { Config, DatabaseConfig } from '../../src/platform/config.js'
import { ResponseChecker } from './openapi-contract.js'
import { freshDatabase } from './store.js'

export const TEST_JWT_SECRET = 'test-secret-0123456789abcdefghijklmnopqrstuvwxyz'

export function testConfig(database: DatabaseConfig, overrides: Partial<Config> = {}): Config {
  return {
    host: '127.0.0.1',
    port: 0,
    database,
    dataDir: '/nonexistent',
    redisUrl: undefined,
    jwtSecret: TEST_JWT_SECRET,
    adminToken: undefined,
    allowSignup: true,
    signupCredits: 0,
    // The fixtures sign up an account or more per test: at the default cost (2^15) each
    // sign-up and login took a sixth of a core-second, a good part of the suite's time.
    // passwords.test.ts checks the default cost itself.
    passwordHashCost: 10,
    rateLimitPerSecond: 1000,
    loginAttemptsPerMinute: 1000,
    bodyLimitBytes: 1_048_576,
    logLevel: 'silent',
    keyUsageFlushMs: 50,
    keyCacheTtlMs: 60_000,
    outboxPollMs: 20,
    outboxRetentionHours: 24,
    trustProxy: false,
    segmentCountSettleMs: 50,
    segmentCountMaxStaleMs: 500,
    importMaxBytes: 10_000_000,
    // Two parser shards, whatever the machine, so the merge of shards is always exercised.
    importParserThreads: 2,
    nodeId: `test-node-${Math.random().toString(36).slice(2, 10)}`,
    leaseTtlMs: 15_000,
    carrier: 'simulator',
    simulatorDeliveryDelayMs: 50,
    smppUrl: undefined,
    smppWindow: 10,
    smppMaxPerSecond: 1000,
    carrierDownAfterMs: 10_000,
    carrierGiveUpAfterMs: 86_400_000,
    publicUrl: undefined,
    receiptTimeoutHours: 72,
    dispatchBatchSize: 500,
    dispatchConcurrency: undefined,
    webhookTimeoutMs: 2_000,
    webhookRetryScheduleMs: [200, 400],
    // Receivers in tests listen on 127.0.0.1; the SSRF tests turn this off.
    webhookAllowPrivateNetworks: true,
    webhookLogRetentionDays: 30,
    pushHistorySize: 1000,
    pushHistoryTtlS: 86_400,
    pushCorsOrigins: ['*'],
    pushPingIntervalMs: 15_000,
    ...overrides,
  }
}

export interface ApiResponse<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

export interface RequestOptions {
  token?: string
  body?: unknown
  /** Sent as-is, with this content type (default application/json). */
  rawBody?: string | Buffer
  contentType?: string
  headers?: Record<string, string>
}

/**
 * A client for a server listening at `url`, speaking JSON. Every response it receives is
 * checked against the OpenAPI document that server serves (openapi-contract.ts): a
 * response the document does not describe fails the request.
 */
export class ApiClient {
  private readonly contract: ResponseChecker

  constructor(readonly url: string) {
    this.contract = new ResponseChecker(url)
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    await this.contract.prepare()
    const headers: Record<string, string> = { ...options.headers }
    if (options.token) headers.authorization = `Bearer ${options.token}`
    let body: string | Buffer | undefined
    if (options.rawBody !== undefined) {
      body = options.rawBody
      headers['content-type'] = options.contentType ?? 'application/json'
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] = options.contentType ?? 'application/json'
    }
    const response = await fetch(this.url + path, { method, headers, body })
    const text = await response.text()
    const type = response.headers.get('content-type') ?? ''
    await this.contract.check({ method, path, status: response.status, headers: response.headers, text })
    const parsed = type.includes('json') && text !== '' ? JSON.parse(text) : text
    return { status: response.status, headers: response.headers, body: parsed as T, text }
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options)
  post = <T = any>(path: string, options?: RequestOptions) => this.request<T>('POST', path, options)
  put = <T = any>(path: string, options?: RequestOptions) => this.request<T>('PUT', path, options)
  patch = <T = any>(path: string, options?: RequestOptions) => this.request<T>('PATCH', path, options)
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options)
}

/** A running server on a real socket, in this process, and a client for it. */
export class TestServer extends ApiClient {
  constructor(
    readonly app: FastifyInstance,
    url: string,
    readonly config: Config,
  ) {
    super(url)
  }

  close(): Promise<void> {
    return this.app.close()
  }
}

export interface StartOptions {
  database?: DatabaseConfig
  config?: Partial<Config>
  clock?: Clock
  /** Silent unless given. */
  logger?: Logger
  /** What PUSH_COALESCE_WRITES=auto reads as the node's load (by default its event loop's). */
  pushBusyProbe?: BuildOptions['pushBusyProbe']
  /** A CA that HTTP carrier connections (twilio) trust besides Node's own (BuildOptions.carrierCa). */
  carrierCa?: string
  /** The chunks a broadcast's recipients are queued in (BuildOptions.broadcastQueue). */
  broadcastQueue?: BuildOptions['broadcastQueue']
}

/** Builds the app as main.ts does and listens on 127.0.0.1, a random port. */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await freshDatabase())
  const config = testConfig(database, options.config)
  const app = await buildApp(config, {
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.pushBusyProbe ? { pushBusyProbe: options.pushBusyProbe } : {}),
    ...(options.carrierCa ? { carrierCa: options.carrierCa } : {}),
    ...(options.broadcastQueue ? { broadcastQueue: options.broadcastQueue } : {}),
    logger: options.logger ?? pino({ level: 'silent' }),
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return new TestServer(app, address, config)
}
