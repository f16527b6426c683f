import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { rootCertificates } from 'node:tls'
import { Agent, request } from 'undici'

/**
 * The floor of bench:webhooks: what a bare undici loop in one Node process achieves
 * against the same receiver. `concurrency` loops share one Agent (keep-alive, `connections`
 * per origin, as the server's delivery agent) and POST, one after another, a delivery
 * per event and webhook: the same body shape and size as the server's ContactCreated
 * deliveries, the Standard Webhooks headers computed per request with that webhook's
 * secret (as the server must: the signature covers the timestamp), the response read to
 * its end. No store, no claims, no logs: only signing and HTTP.
 */
export class Floor {
  private readonly agent: Agent
  private readonly secrets: Buffer[]

  constructor(
    private readonly urlOf: (webhook: number) => string,
    private readonly webhooks: number,
    private readonly concurrency: number,
    connections: number,
    caPem: string,
  ) {
    this.agent = new Agent({ connections, connect: { ca: [...rootCertificates, caPem] } })
    this.secrets = Array.from({ length: webhooks }, () => randomBytes(32))
  }

  /** Sends `events` × webhooks POSTs; resolves when every one has been answered. Throws on a non-2xx. */
  async send(events: number): Promise<void> {
    const bodies = Array.from({ length: events }, (_, e) => ({
      eventId: randomUUID(),
      body: JSON.stringify({ event: 'ContactCreated', contactId: randomUUID(), phoneNumber: `+1202555${String(e).padStart(4, '0')}`, at: new Date().toISOString() }),
    }))
    const total = events * this.webhooks
    let next = 0
    const loop = async () => {
      for (let i = next++; i < total; i = next++) {
        const { eventId, body } = bodies[Math.floor(i / this.webhooks)]!
        const webhook = i % this.webhooks
        const timestamp = Math.floor(Date.now() / 1000)
        const mac = createHmac('sha256', this.secrets[webhook]!).update(`${eventId}.${timestamp}.${body}`).digest('base64')
        const response = await request(this.urlOf(webhook), {
          method: 'POST',
          dispatcher: this.agent,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'messaging-platform-webhooks/1.0',
            'webhook-id': eventId,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': `v1,${mac}`,
          },
          body,
        })
        await response.body.text()
        if (response.statusCode < 200 || response.statusCode >= 300) throw new Error(`floor: the receiver answered ${response.statusCode}`)
      }
    }
    await Promise.all(Array.from({ length: this.concurrency }, loop))
  }

  close(): Promise<void> {
    return this.agent.close()
  }
}
