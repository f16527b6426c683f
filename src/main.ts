import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './platform/config.js'

let config
try {
  config = loadConfig()
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message)
    process.exit(1)
  }
  throw err
}

const app = await buildApp(config)
const address = await app.listen({ host: config.host, port: config.port })
const where = config.database.kind === 'sqlite' ? `SQLite at ${config.database.path}` : 'PostgreSQL'
app.log.info(`messaging platform listening on ${address} (store: ${where}); API reference at ${address}/docs`)
console.log(`Messaging platform ready at ${address}  (API reference: ${address}/docs)`)

let closing = false
async function shutdown(signal: string): Promise<void> {
  if (closing) return
  closing = true
  app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests')
  const force = setTimeout(() => {
    app.log.error('shutdown took over 25 s; exiting')
    process.exit(1)
  }, 25_000)
  force.unref()
  try {
    await app.close()
    process.exit(0)
  } catch (err) {
    app.log.error({ err }, 'shutdown failed')
    process.exit(1)
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
