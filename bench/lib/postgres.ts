import pg from 'pg'

export interface FreshDatabase {
  /** The URL of the new, empty database. */
  url: string
  name: string
  drop(): Promise<void>
}

/**
 * Creates an empty database beside the one `adminUrl` names (same server, same user),
 * for one run; drop() removes it, closing any connection left in it.
 */
export async function createFreshDatabase(adminUrl: string, prefix = 'bench'): Promise<FreshDatabase> {
  const name = `${prefix}_${Date.now()}_${process.pid}`
  await withClient(adminUrl, (client) => client.query(`create database "${name}"`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    name,
    drop: () => withClient(adminUrl, (client) => client.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  }
}

/** Runs `work` on a connection of its own, closed after. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** The server's version string, for the report. */
export async function serverVersion(url: string): Promise<string> {
  return withClient(url, async (client) => {
    const result = await client.query<{ server_version: string }>('show server_version')
    return result.rows[0]?.server_version ?? '?'
  })
}
