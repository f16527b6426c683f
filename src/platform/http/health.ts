import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Store } from '../db/connect.js'
import { Unavailable } from '../problems.js'

const Status = Type.Object({ status: Type.String() })

/** Liveness (the process answers) and readiness (the store answers too). */
export function installHealth(app: FastifyInstance, store: Store): void {
  app.get('/healthz', {
    schema: { tags: ['health'], summary: 'The process is up', response: { 200: Status } },
    config: { auth: 'public', rateLimit: false },
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: { tags: ['health'], summary: 'The store is reachable', response: { 200: Status, 503: { $ref: 'Problem#' } } },
    config: { auth: 'public', rateLimit: false },
  }, async () => {
    try {
      await store.ping()
    } catch {
      throw new Unavailable('The store is not reachable')
    }
    return { status: 'ready' }
  })
}
