import { expect } from 'vitest'
import { EVERY_EVENT } from '../../src/platform/outbox/demand.js'
import type { RelayedEvent } from '../../src/platform/outbox/events.js'
import { createKey, signUp } from './fixtures.js'
import type { TestServer } from './harness.js'

/**
 * An outbox consumer that records every relayed event, to assert which events a request
 * caused, and which it did not. Attach it before any change so it sees all of them.
 */
export class EventProbe {
  private fences = 0

  private constructor(
    private readonly server: TestServer,
    private readonly fence: { accountId: string; key: string },
    private readonly relayed: RelayedEvent[],
  ) {}

  /**
   * `perRecipient`: the per-recipient SMS events are written for the probe too, as for a
   * webhook that wants every type (otherwise only for the account's webhooks, as in
   * production). Off by default: a broadcast's thousands of them are work the other
   * tests do not look at.
   */
  static async attach(server: TestServer, name: string, options: { perRecipient?: boolean } = {}): Promise<EventProbe> {
    const relayed: RelayedEvent[] = []
    server.app.platform.relay.subscribe({ name, handle: async (_trx, events) => void relayed.push(...events) })
    if (options.perRecipient) server.app.platform.demand.add(EVERY_EVENT)
    const fence = await signUp(server, 'Fence')
    return new EventProbe(server, { accountId: fence.accountId, key: await createKey(server, fence) }, relayed)
  }

  /**
   * Waits until every event committed so far has reached the probe: a contact created
   * now, in an account of its own, is relayed after all of them (commit order).
   */
  async settle(): Promise<void> {
    const phoneNumber = `+336${12340000 + this.fences++}`
    const response = await this.server.post('/v1/contacts', { token: this.fence.key, body: { phoneNumbers: phoneNumber } })
    expect(response.body.created).toBe(1)
    await this.server.app.platform.relay.drain()
    await expect
      .poll(() => this.relayed.some((e) => e.accountId === this.fence.accountId && e.data.phoneNumber === phoneNumber), { timeout: 10_000, interval: 20 })
      .toBe(true)
  }

  /** The events of `accountId` that `action` caused, once relayed. */
  async eventsDuring(accountId: string, action: () => Promise<unknown>): Promise<{ type: string; data: Record<string, unknown> }[]> {
    await this.settle()
    const start = this.relayed.length
    await action()
    await this.settle()
    return this.relayed
      .slice(start)
      .filter((e) => e.accountId === accountId)
      .map((e) => ({ type: e.type, data: e.data }))
  }
}
