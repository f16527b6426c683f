// The shapes the test SMSC reports over its control channel, shared with control.ts.

export interface AcceptedSubmit {
  messageId: string
  sourceAddr: string
  sourceAddrTon: number
  sourceAddrNpi: number
  destinationAddr: string
  destAddrTon: number
  destAddrNpi: number
  esmClass: number
  registeredDelivery: number
  dataCoding: number
  /** The whole user data header in hex, length octet included. */
  udh: string | null
  concat: { reference: number; total: number; sequence: number } | null
  text: string
  /** The connection it came on: 1 for the first connection the SMSC accepted, and so on. */
  session?: number
  /** When it was accepted, in ms since the SMSC started. */
  atMs?: number
}

/** Counts of accepted submits, small enough to ask for often. */
export interface SubmitStats {
  accepted: number
  /** Distinct (destinationAddr, concat sequence) pairs; a part without concatenation counts as sequence 1. */
  distinctParts: number
  /** Accepted submits per connection, by session number. */
  bySession: Record<number, number>
  /** Parts accepted more than once, with the session of each acceptance in order. */
  repeated: { destinationAddr: string; sequence: number; count: number; sessions: number[] }[]
}

export interface SmscState {
  binds: { systemId: string; isAccepted: boolean; atMs: number }[]
  boundSessions: number
  submits: AcceptedSubmit[]
  throttled: number
  discarded: number
  enquireLinksReceived: number
  unbindsReceived: number
  /** Every deliver_sm_resp, re-offers included. */
  deliveries: { kind: 'receipt' | 'inbound'; messageId: string | null; status: number }[]
}

export type ReceiptMode = 'off' | 'on' | 'text-only'

export interface InboundSpec {
  from: string
  to: string
  text: string
  encoding?: 'GSM-7' | 'UCS-2'
  /** Parts the text is cut into, each with a concatenation header when more than one. */
  parts?: number
  referenceBits?: 8 | 16
  reference?: number
  /** Sends the last part first. */
  isReversed?: boolean
}
