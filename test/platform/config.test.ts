import { mkdtempSync, readFileSync, statSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/platform/config.js'

const SECRET = 'a-secret-of-at-least-thirty-two-characters'

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'mp-config-'))
}

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
  throw new Error('loadConfig accepted the environment')
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    // A JWT_SECRET is given so that loading the defaults writes no file into ./data.
    const config = loadConfig({ JWT_SECRET: SECRET })
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 3000,
      database: { kind: 'sqlite', path: resolve('data/messaging.db') },
      dataDir: resolve('data'),
      redisUrl: undefined,
      jwtSecret: SECRET,
      adminToken: undefined,
      allowSignup: true,
      signupCredits: 0,
      passwordHashCost: 15,
      rateLimitPerSecond: 50,
      bodyLimitBytes: 1_048_576,
      logLevel: 'info',
      trustProxy: false,
    })
    expect(config.keyUsageFlushMs).toBeLessThanOrEqual(60_000)
    expect(Object.isFrozen(config)).toBe(true)
  })

  it('reads every variable it is given', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '8080',
      DATABASE_URL: 'postgres://app@db.internal:5432/messaging',
      REDIS_URL: 'redis://cache:6379',
      JWT_SECRET: SECRET,
      ADMIN_TOKEN: 'operator-token-0123456789',
      ALLOW_SIGNUP: 'false',
      SIGNUP_CREDITS: '25',
      PASSWORD_HASH_COST: '17',
      RATE_LIMIT_PER_SECOND: '7',
      LOG_LEVEL: 'warn',
      TRUST_PROXY: '1',
    })
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      database: { kind: 'postgres', url: 'postgres://app@db.internal:5432/messaging' },
      redisUrl: 'redis://cache:6379',
      adminToken: 'operator-token-0123456789',
      allowSignup: false,
      signupCredits: 25,
      passwordHashCost: 17,
      rateLimitPerSecond: 7,
      logLevel: 'warn',
      trustProxy: true,
    })
  })

  it('treats empty and blank variables as unset', () => {
    const config = loadConfig({ JWT_SECRET: SECRET, PORT: '', LOG_LEVEL: '   ', ADMIN_TOKEN: '' })
    expect(config).toMatchObject({ port: 3000, logLevel: 'info', adminToken: undefined })
  })

  it('reports every bad variable together in one ConfigError', () => {
    const error = configError({
      JWT_SECRET: SECRET,
      PORT: 'abc',
      LOG_LEVEL: 'loud',
      ALLOW_SIGNUP: 'maybe',
      RATE_LIMIT_PER_SECOND: '0',
      SIGNUP_CREDITS: '-5',
      PASSWORD_HASH_COST: '9',
      REDIS_URL: 'http://cache:6379',
      ADMIN_TOKEN: 'short',
    })
    const named = ['PORT', 'LOG_LEVEL', 'ALLOW_SIGNUP', 'RATE_LIMIT_PER_SECOND', 'SIGNUP_CREDITS', 'PASSWORD_HASH_COST', 'REDIS_URL', 'ADMIN_TOKEN']
    expect(error.problems).toHaveLength(named.length)
    for (const variable of named) {
      expect(error.problems.filter((problem) => problem.startsWith(`${variable} `)), variable).toHaveLength(1)
      expect(error.message).toContain(variable)
    }
    expect(error.problems.find((p) => p.startsWith('PORT '))).toContain('"abc"')
    expect(error.problems.find((p) => p.startsWith('LOG_LEVEL '))).toContain('"loud"')
    expect(error.problems.find((p) => p.startsWith('ALLOW_SIGNUP '))).toContain('"maybe"')
  })

  it('reads the push settings: history size and age, CORS origins, the ping interval and write coalescing', () => {
    expect(loadConfig({ JWT_SECRET: SECRET })).toMatchObject({
      pushHistorySize: 1000,
      pushHistoryTtlS: 86_400,
      pushCorsOrigins: ['*'],
      pushPingIntervalMs: 15_000,
      pushCoalesceWrites: 'auto',
    })
    const config = loadConfig({
      JWT_SECRET: SECRET,
      PUSH_HISTORY_SIZE: '50',
      PUSH_HISTORY_TTL_S: '3600',
      PUSH_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173',
      PUSH_PING_INTERVAL_MS: '5000',
      PUSH_COALESCE_WRITES: 'true',
    })
    expect(config).toMatchObject({
      pushHistorySize: 50,
      pushHistoryTtlS: 3600,
      pushCorsOrigins: ['https://app.example.com', 'http://localhost:5173'],
      pushPingIntervalMs: 5000,
      pushCoalesceWrites: 'always',
    })
    const error = configError({
      JWT_SECRET: SECRET,
      PUSH_HISTORY_SIZE: '0',
      PUSH_HISTORY_TTL_S: '10',
      PUSH_CORS_ORIGINS: 'https://app.example.com/path,*.example.com',
      PUSH_PING_INTERVAL_MS: 'often',
      PUSH_COALESCE_WRITES: 'sometimes',
    })
    expect(error.problems.map((problem) => problem.split(' ')[0])).toEqual(['PUSH_HISTORY_SIZE', 'PUSH_HISTORY_TTL_S', 'PUSH_CORS_ORIGINS', 'PUSH_PING_INTERVAL_MS', 'PUSH_COALESCE_WRITES'])
    expect(error.problems[2]).toContain('"https://app.example.com/path", "*.example.com"')
  })

  it('refuses a database URL of another kind', () => {
    const error = configError({ JWT_SECRET: SECRET, DATABASE_URL: 'mysql://db/app' })
    expect(error.problems).toEqual([expect.stringContaining('DATABASE_URL')])
  })

  it('requires JWT_SECRET with a PostgreSQL database', () => {
    for (const url of ['postgres://app@db/messaging', 'postgresql://app@db/messaging']) {
      const error = configError({ DATABASE_URL: url })
      expect(error.problems).toEqual([expect.stringMatching(/^JWT_SECRET is required/)])
    }
  })

  it('refuses a JWT_SECRET shorter than 32 characters, on either store', () => {
    for (const DATABASE_URL of ['postgres://app@db/messaging', `sqlite:${join(tempDir(), 'x.db')}`]) {
      const error = configError({ DATABASE_URL, JWT_SECRET: 'x'.repeat(31) })
      expect(error.problems).toEqual([expect.stringMatching(/^JWT_SECRET must be at least 32 characters/)])
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://app@db/messaging', JWT_SECRET: 'x'.repeat(32) }).jwtSecret).toBe('x'.repeat(32))
  })

  it('generates a secret once in SQLite mode, keeps it beside the database with mode 0600, and reads it back', () => {
    const dir = join(tempDir(), 'nested')
    const env = { DATABASE_URL: `sqlite:${join(dir, 'x.db')}` }
    const file = join(dir, 'jwt-secret')
    expect(existsSync(file)).toBe(false)

    const first = loadConfig(env)
    expect(first.dataDir).toBe(dir)
    expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32)
    expect(readFileSync(file, 'utf8').trim()).toBe(first.jwtSecret)
    expect(statSync(file).mode & 0o777).toBe(0o600)

    const second = loadConfig(env)
    expect(second.jwtSecret).toBe(first.jwtSecret)

    // A different data folder gets its own secret.
    const elsewhere = loadConfig({ DATABASE_URL: `sqlite:${join(tempDir(), 'x.db')}` })
    expect(elsewhere.jwtSecret).not.toBe(first.jwtSecret)
  })

  it('prefers a given JWT_SECRET in SQLite mode and writes no file', () => {
    const dir = tempDir()
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'x.db')}`, JWT_SECRET: SECRET })
    expect(config.jwtSecret).toBe(SECRET)
    expect(existsSync(join(dir, 'jwt-secret'))).toBe(false)
  })

  it('uses a fresh random secret for an in-memory SQLite database', () => {
    const one = loadConfig({ DATABASE_URL: 'sqlite::memory:' })
    const two = loadConfig({ DATABASE_URL: 'sqlite::memory:' })
    expect(one.database).toEqual({ kind: 'sqlite', path: ':memory:' })
    expect(one.jwtSecret.length).toBeGreaterThanOrEqual(32)
    expect(one.jwtSecret).not.toBe(two.jwtSecret)
  })
})
