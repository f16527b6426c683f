import type { FastifyInstance } from 'fastify'
import { Unavailable } from '../problems.js'

/**
 * Once the app is closing:
 * - a request that arrives (on a connection opened before) is refused with 503 as
 *   problem+json, like every other error, rather than Fastify's own plain JSON
 *   (`return503OnClosing: false` where the app is created);
 * - every response asks its client to close the connection. Otherwise a keep-alive
 *   connection whose request was in flight at SIGTERM stays open after its response
 *   until the client's idle timeout (Fastify advertises 72 s), and the server cannot
 *   finish closing.
 */
export function installDraining(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  // Callback hooks: they run on every request, and an async one costs a promise each.
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? new Unavailable('The server is shutting down; send the request again') : undefined)
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}
