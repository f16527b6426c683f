import type { FastifyInstance } from 'fastify'

/**
 * Once the app is closing, every response asks its client to close the connection.
 * Otherwise a keep-alive connection whose request was in flight at SIGTERM stays open
 * after its response until the client's idle timeout (Fastify advertises 72 s), and the
 * server cannot finish closing.
 */
export function installDraining(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close')
    return payload
  })
}
