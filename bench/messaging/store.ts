import { constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { withClient } from '../lib/postgres.js'
import { PROJECT_DIR, startServer } from '../lib/server.js'
import { insertContactsPostgres, insertContactsSqlite, type RoutesMode } from './contacts.js'

/** Who the prepared store holds: the sender, with the contacts, and a bystander account. */
export interface Accounts {
  senderAccountId: string
  senderKey: string
  bystanderAccountId: string
  bystanderKey: string
}

/** One run's own copy of the prepared store. */
export interface StoreCopy {
  databaseUrl: string
  /** SQLite only: the file. */
  path?: string
  /** PostgreSQL only: the database's name. */
  name?: string
  drop(): Promise<void>
}

export interface PreparedStore {
  kind: 'sqlite' | 'postgres'
  accounts: Accounts
  /** Where it is kept between runs. */
  describe: string
  copy(label: string): Promise<StoreCopy>
}

export const JWT_SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const CACHE_DIR = resolve(PROJECT_DIR, '.bench', 'messaging', 'stores')

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`POST ${url}: ${response.status} ${text}`)
  return JSON.parse(text)
}

async function newAccount(base: string, name: string): Promise<{ accountId: string; key: string }> {
  const email = `${name.toLowerCase()}-${Date.now()}@example.com`
  const password = 'bench password 0123'
  const { accountId } = await post(`${base}/v1/auth/signup`, { email, password, accountName: name })
  const { token } = await post(`${base}/v1/auth/login`, { email, password })
  const key = (await post(`${base}/v1/keys`, { name: 'bench', permission: 'Full' }, token)) as string
  return { accountId, key }
}

/** Starts the server once on an empty store (it migrates it), signs up both accounts, and stops it. */
async function migrateAndSignUp(entry: string, databaseUrl: string): Promise<Accounts> {
  const server = await startServer({ mode: 'dist', entry, env: { DATABASE_URL: databaseUrl, JWT_SECRET, LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000' } })
  try {
    const sender = await newAccount(server.url, 'Sender')
    const bystander = await newAccount(server.url, 'Bystander')
    return { senderAccountId: sender.accountId, senderKey: sender.key, bystanderAccountId: bystander.accountId, bystanderKey: bystander.key }
  } finally {
    await server.stop()
  }
}

const log = (message: string) => process.stderr.write(`${message}\n`)

/** What names a cached store besides the schema: the count, and the countries' mix when it is not all US (--routes mixed). */
function storeKey(contacts: number, routes: RoutesMode, separator: string): string {
  return routes === 'single' ? `${contacts}` : `${routes}${separator}${contacts}`
}

/**
 * A SQLite file with the schema, both accounts and `contacts` contacts, kept in
 * .bench/messaging/stores and reused while the schema (`fingerprint`) and the contacts'
 * mix (`routes`) are the same; each run works on a copy of the file.
 */
export async function prepareSqlite(entry: string, contacts: number, routes: RoutesMode, fingerprint: string, refresh: boolean): Promise<PreparedStore> {
  mkdirSync(CACHE_DIR, { recursive: true })
  const base = join(CACHE_DIR, `sqlite-${storeKey(contacts, routes, '-')}-${fingerprint}`)
  const file = `${base}.db`
  const metaFile = `${base}.json`
  if (refresh || !existsSync(file) || !existsSync(metaFile)) {
    const partial = `${file}.partial`
    for (const suffix of ['', '-wal', '-shm']) rmSync(partial + suffix, { force: true })
    const started = performance.now()
    log(`preparing ${file}: migrating, signing up, inserting ${contacts.toLocaleString('en')} contacts (once; reused by later runs)`)
    const accounts = await migrateAndSignUp(entry, `sqlite:${partial}`)
    insertContactsSqlite(partial, accounts.senderAccountId, contacts, routes, (done) => log(`  ${done.toLocaleString('en')} contacts`))
    for (const suffix of ['-wal', '-shm']) rmSync(partial + suffix, { force: true })
    renameSync(partial, file)
    writeFileSync(metaFile, JSON.stringify(accounts, null, 2))
    log(`prepared in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  }
  const accounts = JSON.parse(readFileSync(metaFile, 'utf8')) as Accounts
  return {
    kind: 'sqlite',
    accounts,
    describe: file,
    async copy(label) {
      const dir = mkdtempSync(join(tmpdir(), `bench-messaging-${label}-`))
      const path = join(dir, 'bench.db')
      copyFileSync(file, path, constants.COPYFILE_FICLONE)
      return { databaseUrl: `sqlite:${path}`, path, drop: async () => rmSync(dir, { recursive: true, force: true }) }
    },
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * The same as a PostgreSQL database used as a template, kept on the server between
 * runs (bench_msg_tpl_<contacts>_<fingerprint>, bench_msg_tpl_mixed_<contacts>_<fingerprint>
 * for --routes mixed); each run creates its own database from it (CREATE DATABASE …
 * TEMPLATE, a file copy) and drops it afterwards.
 */
export async function preparePostgres(entry: string, adminUrl: string, contacts: number, routes: RoutesMode, fingerprint: string, refresh: boolean): Promise<PreparedStore> {
  mkdirSync(CACHE_DIR, { recursive: true })
  const template = `bench_msg_tpl_${storeKey(contacts, routes, '_')}_${fingerprint}`
  const metaFile = join(CACHE_DIR, `postgres-${new URL(adminUrl).host.replace(/[^a-zA-Z0-9]/g, '_')}-${template}.json`)
  const exists = await withClient(adminUrl, async (c) => (await c.query('select 1 from pg_database where datname = $1', [template])).rowCount === 1)
  if (refresh || !exists || !existsSync(metaFile)) {
    const started = performance.now()
    log(`preparing the template database ${template}: migrating, signing up, inserting ${contacts.toLocaleString('en')} contacts (once; reused by later runs)`)
    await withClient(adminUrl, async (c) => {
      await c.query(`drop database if exists "${template}" with (force)`)
      await c.query(`create database "${template}"`)
    })
    const url = databaseUrl(adminUrl, template)
    const accounts = await migrateAndSignUp(entry, url)
    await insertContactsPostgres(url, accounts.senderAccountId, contacts, routes, (done) => log(`  ${done.toLocaleString('en')} contacts`))
    writeFileSync(metaFile, JSON.stringify(accounts, null, 2))
    log(`prepared in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  }
  const accounts = JSON.parse(readFileSync(metaFile, 'utf8')) as Accounts
  return {
    kind: 'postgres',
    accounts,
    describe: `template database ${template} on ${new URL(adminUrl).host}`,
    async copy(label) {
      const name = `bench_msg_${label}_${Date.now()}_${process.pid}`
      await withClient(adminUrl, (c) => c.query(`create database "${name}" template "${template}" strategy file_copy`))
      return {
        databaseUrl: databaseUrl(adminUrl, name),
        name,
        drop: () => withClient(adminUrl, (c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
      }
    },
  }
}
