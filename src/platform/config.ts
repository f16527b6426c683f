import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, hostname } from 'node:os'
import { dirname, join, resolve } from 'node:path'

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string; schema?: string }

/**
 * scrypt's N as a power of two for password hashes. OWASP's floor, N=2^17 with r=8, costs
 * about 128 MiB and 0.3 s a hash here; N=2^15 keeps a login near 80 ms on two shared cores
 * while staying far beyond a fast hash. The server warns at start below it.
 */
export const DEFAULT_PASSWORD_HASH_COST = 15

export interface Config {
  host: string
  port: number
  database: DatabaseConfig
  /** Where SQLite mode keeps its files (the database and the generated JWT secret). */
  dataDir: string
  redisUrl: string | undefined
  jwtSecret: string
  adminToken: string | undefined
  allowSignup: boolean
  signupCredits: number
  /** scrypt's N as a power of two for new password hashes (PASSWORD_HASH_COST). */
  passwordHashCost: number
  rateLimitPerSecond: number
  loginAttemptsPerMinute: number
  bodyLimitBytes: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  keyUsageFlushMs: number
  /** Verified API keys are kept in memory at most this long (0: every request looks the key up). */
  keyCacheTtlMs: number
  outboxPollMs: number
  /** Relayed domain events are kept this long, then deleted. */
  outboxRetentionHours: number
  trustProxy: boolean
  /** Segment counts in listings are refreshed once changes have been quiet this long... */
  segmentCountSettleMs: number
  /** ...and never left stale longer than this while changes keep coming. */
  segmentCountMaxStaleMs: number
  /** Largest CSV upload POST /v1/contacts/import takes. */
  importMaxBytes: number
  /** Threads parsing CSV and phone numbers for each import. */
  importParserThreads: number
  /** This process among the nodes sharing the store; new on every start. */
  nodeId: string
  /** How long a claim on background work holds without renewal (see platform/lease.ts). */
  leaseTtlMs: number
  /** Where SMS go: the simulator, or an SMSC over SMPP 3.4. Playground keys always use the sandbox. */
  carrier: 'simulator' | 'smpp'
  simulatorDeliveryDelayMs: number
  /** smpp://system_id:password@host:port */
  smppUrl: string | undefined
  /** Submits awaiting their answer at once. */
  smppWindow: number
  smppMaxPerSecond: number
  /** An SMPP connection not bound this long is down: its routes skip it. */
  carrierDownAfterMs: number
  /** A recipient no carrier of its route takes fails this long after it was paid for. */
  carrierGiveUpAfterMs: number
  /** The platform's public address (https://sms.example.com), where carriers call back; no trailing slash. */
  publicUrl: string | undefined
  /** A sent recipient with no receipt after this many hours is settled as sent without a receipt. */
  receiptTimeoutHours: number
  /** Recipients the dispatcher claims and records at once; undefined: 500 on PostgreSQL, 250 on SQLite. */
  dispatchBatchSize: number | undefined
  /** Dispatch batches in flight at once, whatever the carriers; undefined: 4 on PostgreSQL (1 while every carrier is a simulator), 2 on SQLite. */
  dispatchConcurrency: number | undefined
  /** How long one webhook delivery attempt may take, connection to response. */
  webhookTimeoutMs: number
  /** Delays before each automatic retry of a failed webhook delivery, in order. */
  webhookRetryScheduleMs: number[]
  /** Lets webhooks reach private, loopback and link-local addresses (tests, closed networks). */
  webhookAllowPrivateNetworks: boolean
  /** Webhook delivery logs and finished deliveries are deleted after this many days. */
  webhookLogRetentionDays: number
  /** Push events kept per channel for replay (at least this many, newest first)... */
  pushHistorySize: number
  /** ...and for at most this long. */
  pushHistoryTtlS: number
  /** Origins whose pages may open push streams (CORS); `['*']` for any. */
  pushCorsOrigins: readonly string[]
  /** How often an idle push stream gets a `: ping` comment, so proxies keep it open. */
  pushPingIntervalMs: number
  /**
   * Whether live push streams let the kernel coalesce events that follow each other within
   * a round trip (Nagle's algorithm, as nginx does for streamed responses): fewer packets
   * and less CPU at high event rates, for a delay of up to the client's delayed ACK on
   * such events. `auto` (PUSH_COALESCE_WRITES=auto, the default): only while the node's
   * event loop is busy; `always` (true); `never` (false): every event sent at once.
   */
  pushCoalesceWrites?: 'auto' | 'always' | 'never'
  /** GET /metrics (Prometheus text format) exists only when true; absent: off. */
  metricsEnabled?: boolean
  /** When set, GET /metrics requires `Authorization: Bearer <metricsToken>`. */
  metricsToken?: string | undefined
}

/** PUSH_COALESCE_WRITES as written, and what it means. */
const COALESCE_MODES = { auto: 'auto', true: 'always', false: 'never' } as const

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const MIN_SECRET_LENGTH = 32

/**
 * Reads the environment once and checks every variable, reporting all bad ones
 * together. No other file reads process.env.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = []
  const read = new EnvReader(env, problems)

  const host = read.string('HOST', '127.0.0.1')
  const port = read.integer('PORT', 3000, 0, 65535)
  const database = parseDatabaseUrl(read.string('DATABASE_URL', 'sqlite:./data/messaging.db'), problems)
  const dataDir = database.kind === 'sqlite' && database.path !== ':memory:' ? dirname(database.path) : resolve('data')
  const redisUrl = read.optional('REDIS_URL')
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://')
  const adminToken = read.optional('ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16) problems.push('ADMIN_TOKEN must be at least 16 characters')

  let jwtSecret = read.optional('JWT_SECRET')
  if (jwtSecret !== undefined && jwtSecret.length < MIN_SECRET_LENGTH) {
    problems.push(`JWT_SECRET must be at least ${MIN_SECRET_LENGTH} characters`)
  } else if (jwtSecret === undefined && database.kind === 'postgres') {
    // Several nodes share one PostgreSQL; a secret generated on one would not verify on another.
    problems.push('JWT_SECRET is required when DATABASE_URL is a PostgreSQL URL')
  }

  const config = {
    host,
    port,
    database,
    dataDir,
    redisUrl,
    jwtSecret: jwtSecret ?? '',
    adminToken,
    allowSignup: read.boolean('ALLOW_SIGNUP', true),
    signupCredits: read.integer('SIGNUP_CREDITS', 0, 0, 1_000_000_000),
    passwordHashCost: read.integer('PASSWORD_HASH_COST', DEFAULT_PASSWORD_HASH_COST, 10, 17),
    rateLimitPerSecond: read.integer('RATE_LIMIT_PER_SECOND', 50, 1, 1_000_000),
    loginAttemptsPerMinute: read.integer('LOGIN_ATTEMPTS_PER_MINUTE', 10, 1, 1_000_000),
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 1_048_576, 1024, 1_073_741_824),
    logLevel: read.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    keyUsageFlushMs: read.integer('KEY_USAGE_FLUSH_MS', 10_000, 10, 60_000),
    keyCacheTtlMs: read.integer('KEY_CACHE_TTL_MS', 60_000, 0, 3_600_000),
    outboxPollMs: read.integer('OUTBOX_POLL_MS', 200, 10, 60_000),
    outboxRetentionHours: read.integer('OUTBOX_RETENTION_HOURS', 24, 1, 8760),
    trustProxy: read.boolean('TRUST_PROXY', false),
    segmentCountSettleMs: read.integer('SEGMENT_COUNT_SETTLE_MS', 2_000, 10, 600_000),
    segmentCountMaxStaleMs: read.integer('SEGMENT_COUNT_MAX_STALE_MS', 30_000, 100, 3_600_000),
    importMaxBytes: read.integer('IMPORT_MAX_BYTES', 536_870_912, 1024, 17_179_869_184),
    // Phone validation is the costly part of parsing, and the writer needs a core of its
    // own once the table is large: one parser per remaining core, at least 1, at most 4.
    importParserThreads: read.integer('IMPORT_PARSER_THREADS', Math.max(1, Math.min(4, availableParallelism() - 1)), 1, 16),
    // Readable in logs and lease columns, and unique per start, so a restarted process
    // never mistakes its earlier run's claims for its own.
    nodeId: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    leaseTtlMs: read.integer('LEASE_TTL_MS', 15_000, 300, 600_000),
    carrier: read.oneOf('CARRIER', 'simulator', ['simulator', 'smpp'] as const),
    simulatorDeliveryDelayMs: read.integer('SIMULATOR_DELIVERY_DELAY_MS', 500, 0, 3_600_000),
    smppUrl: read.optional('SMPP_URL'),
    smppWindow: read.integer('SMPP_WINDOW', 10, 1, 1000),
    smppMaxPerSecond: read.integer('SMPP_MAX_PER_SECOND', 100, 1, 100_000),
    carrierDownAfterMs: read.integer('CARRIER_DOWN_AFTER_MS', 10_000, 100, 3_600_000),
    carrierGiveUpAfterMs: read.integer('CARRIER_GIVE_UP_AFTER_MS', 86_400_000, 1_000, 30 * 86_400_000),
    publicUrl: read.optional('PUBLIC_URL')?.replace(/\/+$/, ''),
    receiptTimeoutHours: read.integer('RECEIPT_TIMEOUT_HOURS', 72, 1, 8_760),
    dispatchBatchSize: read.optional('DISPATCH_BATCH_SIZE') === undefined ? undefined : read.integer('DISPATCH_BATCH_SIZE', 500, 1, 5000),
    dispatchConcurrency: read.optional('DISPATCH_CONCURRENCY') === undefined ? undefined : read.integer('DISPATCH_CONCURRENCY', 1, 1, 32),
    webhookTimeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    webhookRetryScheduleMs: read.durations('WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h'),
    webhookAllowPrivateNetworks: read.boolean('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    webhookLogRetentionDays: read.integer('WEBHOOK_LOG_RETENTION_DAYS', 30, 1, 3650),
    pushHistorySize: read.integer('PUSH_HISTORY_SIZE', 1000, 1, 1_000_000),
    pushHistoryTtlS: read.integer('PUSH_HISTORY_TTL_S', 86_400, 60, 30 * 86_400),
    pushCorsOrigins: read.origins('PUSH_CORS_ORIGINS', '*'),
    pushPingIntervalMs: read.integer('PUSH_PING_INTERVAL_MS', 15_000, 100, 300_000),
    pushCoalesceWrites: COALESCE_MODES[read.oneOf('PUSH_COALESCE_WRITES', 'auto', ['auto', 'true', 'false'] as const)],
    metricsEnabled: read.boolean('METRICS_ENABLED', false),
    metricsToken: read.optional('METRICS_TOKEN'),
  } satisfies Config

  if (config.carrier === 'smpp' && (config.smppUrl === undefined || !/^smpp:\/\/[^:@/]+:[^@/]*@[^:/]+(:\d+)?\/?$/.test(config.smppUrl))) {
    problems.push('CARRIER=smpp needs SMPP_URL=smpp://system_id:password@host:port')
  }
  if (config.publicUrl !== undefined && !/^https?:\/\/[^/\s?#]+(\/[^\s?#]*)?$/.test(config.publicUrl)) {
    problems.push('PUBLIC_URL must be an http(s) address without query or fragment, e.g. https://sms.example.com')
  }
  if (config.metricsToken !== undefined && config.metricsToken.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters')
  if (problems.length > 0) throw new ConfigError(problems)
  if (config.jwtSecret === '') config.jwtSecret = loadOrCreateSecret(dataDir, database)
  return Object.freeze(config)
}

function parseDatabaseUrl(url: string, problems: string[]): DatabaseConfig {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    if (path === '') problems.push('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/messaging.db')
    return { kind: 'sqlite', path: path === ':memory:' ? path : resolve(path) }
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { kind: 'postgres', url }
  problems.push('DATABASE_URL must be sqlite:<path> or postgres://...')
  return { kind: 'sqlite', path: ':memory:' }
}

/** SQLite mode runs on one machine, so a secret kept beside the database is enough. */
function loadOrCreateSecret(dataDir: string, database: DatabaseConfig): string {
  if (database.kind === 'sqlite' && database.path === ':memory:') return randomBytes(32).toString('base64url')
  const file = join(dataDir, 'jwt-secret')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, secret, { mode: 0o600, flag: 'wx' })
  chmodSync(file, 0o600)
  return secret
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

function parseDurations(text: string): number[] | undefined {
  const values = text.split(',').map((part) => {
    const match = /^(\d+)(ms|s|m|h|d)$/.exec(part.trim())
    return match ? Number(match[1]) * DURATION_UNITS_MS[match[2]!]! : NaN
  })
  return values.length <= 20 && values.every((ms) => ms >= 1 && ms <= 7 * 86_400_000) ? values : undefined
}

class EnvReader {
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly problems: string[],
  ) {}

  optional(name: string): string | undefined {
    const value = this.env[name]
    return value === undefined || value.trim() === '' ? undefined : value.trim()
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name)
    if (raw === undefined) return fallback
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
      return fallback
    }
    return Number(raw)
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.optional(name)
    if (raw === undefined) return fallback
    if (raw === 'true' || raw === '1') return true
    if (raw === 'false' || raw === '0') return false
    this.problems.push(`${name} must be true or false, got "${raw}"`)
    return fallback
  }

  /** A comma-separated list of durations such as `5s,5m,2h` (units ms, s, m, h, d), in milliseconds. */
  durations(name: string, fallback: string): number[] {
    const raw = this.optional(name)
    if (raw === undefined) return parseDurations(fallback)!
    const values = parseDurations(raw)
    if (values === undefined) {
      this.problems.push(`${name} must be 1 to 20 comma-separated durations from 1ms to 7d, such as 5s,5m,2h; got "${raw}"`)
      return parseDurations(fallback)!
    }
    return values
  }

  /** `*`, or a comma-separated list of origins such as `https://app.example.com,http://localhost:5173`. */
  origins(name: string, fallback: string): string[] {
    const raw = this.optional(name) ?? fallback
    if (raw === '*') return ['*']
    const origins = raw.split(',').map((origin) => origin.trim())
    // An origin is what a browser sends in Origin: scheme, host and port, no path.
    const bad = origins.filter((origin) => !/^https?:\/\/[^/\s,*]+$/.test(origin))
    if (bad.length > 0) {
      this.problems.push(`${name} must be * or comma-separated origins such as https://app.example.com; not ${bad.map((o) => `"${o}"`).join(', ')}`)
      return ['*']
    }
    return origins
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.optional(name)
    if (raw === undefined) return fallback
    if (!(allowed as readonly string[]).includes(raw)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
      return fallback
    }
    return raw as T
  }
}
