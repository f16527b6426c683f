import type { Carrier, CarrierState, OutgoingPart, SubmitResult } from '../carriers/carrier.js'
import type { LinkStatus } from './binds.js'

/**
 * An SMPP connection bound on other nodes only: this node hands nothing to it. The
 * dispatcher leaves its recipients for the nodes that hold a bind while their link is up
 * or connecting, and passes them to the route's next carrier when it is down (or no node
 * holds a bind).
 */
export class RemoteCarrier implements Carrier {
  readonly name = 'smpp'
  readonly remote = true
  readonly window = 1
  readonly connection: string
  private status: LinkStatus = 'connecting'
  private since = new Date()

  constructor(readonly connectionName: string) {
    this.connection = `remote:${connectionName}`
  }

  /** The status of the best link the other nodes hold, as the last bind sweep read it. */
  seen(status: LinkStatus): void {
    if (status === this.status) return
    this.status = status
    this.since = new Date()
  }

  async start(): Promise<void> {}

  submit(_part: OutgoingPart): Promise<SubmitResult> {
    return Promise.reject(new Error(`${this.connectionName} is bound on another node; nothing is handed to it here`))
  }

  state(): CarrierState {
    return { status: this.status, since: this.since, inFlight: 0, sentLastMinute: 0, lastError: this.status === 'down' ? 'no node holds a bind that is up' : null }
  }

  async stop(): Promise<void> {}
}
