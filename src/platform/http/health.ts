import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Store } from '../db/connect.js'
import { Unavailable } from '../problems.js'
import { problemResponses } from './schemas.js'

const Status = Type.Object({ status: Type.String() })

/** Liveness (the process answers) and readiness (the store answers too). */
export function installHealth(app: FastifyInstance, store: Store): void {
  app.get('/healthz', {
    schema: {
      operationId: 'getHealth',
      tags: ['health'],
      summary: 'The process is up',
      description: 'Liveness: answers 200 `{"status":"ok"}` while the process serves requests, without touching the store. Takes no credentials and is not rate limited.',
      response: { 200: Status },
    },
    config: { auth: 'public', rateLimit: false },
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      operationId: 'getReadiness',
      tags: ['health'],
      summary: 'The store is reachable',
      description: 'Readiness: answers 200 `{"status":"ready"}` when the store answers a ping, and 503 when it does not. Takes no credentials and is not rate limited.',
      response: { 200: Status, ...problemResponses({ 503: 'The store is not reachable, or the server is shutting down' }) },
    },
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
