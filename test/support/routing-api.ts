import { setTimeout } from 'node:timers/promises'
import { expect } from 'vitest'
import { TEST_ADMIN_TOKEN } from './fixtures.js'
import type { ApiClient } from './harness.js'

/** A route as PUT /v1/admin/routes takes it. */
export interface RouteEntry {
  prefix: string
  carriers: string[]
  price?: number
  accountId?: string
}

/** The config of an SMPP connection to a test SMSC on 127.0.0.1 (its rate high enough not to matter). */
export function smppConfig(credentials: { systemId: string; password: string }, port: number, window = 10): Record<string, unknown> {
  return { url: `smpp://${credentials.systemId}:${credentials.password}@127.0.0.1:${port}`, window, maxPerSecond: 5_000 }
}

/**
 * The operator calls the routing tests make over and over (carrier connections, the
 * route table) and the wait for a message to settle, against the server `server()`
 * returns. The server must run with TEST_ADMIN_TOKEN.
 */
export function routingApi(server: () => ApiClient) {
  const admin = { token: TEST_ADMIN_TOKEN }

  /** Creates a connection and answers its id. */
  async function createCarrier(body: { name: string; type: 'simulator' | 'smpp' | 'twilio'; enabled?: boolean; config?: Record<string, unknown> }): Promise<string> {
    const response = await server().post('/v1/admin/carriers', { ...admin, body })
    expect(response.status, response.text).toBe(201)
    return response.body as string
  }

  async function carrier(id: string): Promise<any> {
    const response = await server().get(`/v1/admin/carriers/${id}`, admin)
    expect(response.status).toBe(200)
    return response.body
  }

  /** Waits until the node that answers shows the connection in this status (in hooks too: no expect.poll). */
  async function waitForStatus(id: string, status: 'up' | 'connecting' | 'down' | 'disabled', timeout = 10_000): Promise<any> {
    const deadline = performance.now() + timeout
    for (;;) {
      const last = await carrier(id)
      if (last.state.status === status) return last
      if (performance.now() > deadline) throw new Error(`connection ${last.name} is ${last.state.status} after ${timeout} ms, not ${status} (${last.state.lastError ?? 'no error'})`)
      await setTimeout(25)
    }
  }

  /** Replaces the route table; the node that answers runs it once it has answered. */
  async function putRoutes(routes: RouteEntry[]): Promise<{ version: number; routes: unknown[] }> {
    const response = await server().put('/v1/admin/routes', { ...admin, body: { routes } })
    expect(response.status, response.text).toBe(200)
    return response.body
  }

  /** GET /v1/sms/{id} once every recipient is delivered or failed. */
  async function settled(messageId: string, token: string, timeout = 20_000): Promise<any> {
    let message: any
    await expect
      .poll(async () => {
        message = (await server().get(`/v1/sms/${messageId}`, { token })).body
        return message.recipients.every((r: any) => r.status === 'delivered' || r.status === 'failed')
      }, { timeout, interval: 50 })
      .toBe(true)
    return message
  }

  async function balance(token: string): Promise<number> {
    const response = await server().get('/v1/account', { token })
    expect(response.status).toBe(200)
    return response.body.balance as number
  }

  return { admin, createCarrier, carrier, waitForStatus, putRoutes, settled, balance }
}
