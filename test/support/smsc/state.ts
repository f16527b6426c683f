// What the test SMSC process was started with, has recorded and is set to do, shared by its modules.
import type smpp from 'smpp'
import type { AcceptedSubmit, ReceiptMode, SmscState, SubmitStats } from './types.js'

export const [systemId = '', password = '', firstMessageId] = process.argv.slice(2)
const DEFAULT_FIRST_MESSAGE_ID = 0x5a000000
const startedAt = performance.now()

export let state: SmscState = emptyState()
export let behaviour = defaultBehaviour()
let nextMessageId = firstMessageId === undefined ? DEFAULT_FIRST_MESSAGE_ID : Number(firstMessageId)
export const bound = new Set<smpp.Session>()

function emptyState(): SmscState {
  return { binds: [], boundSessions: 0, submits: [], throttled: 0, discarded: 0, enquireLinksReceived: 0, unbindsReceived: 0, deliveries: [] }
}

function defaultBehaviour() {
  return {
    throttleNext: 0,
    drop: undefined as { afterAccepting: number; discardBeforeDrop: number } | undefined,
    receipts: 'off' as ReceiptMode,
    undelivered: new Set<string>(),
    refusedDestinations: new Set<string>(),
    answerEnquireLinks: true,
    /** Every submit_sm answer waits this long, so submits are in flight when a test acts. */
    submitLatencyMs: 0,
    /** A receipt goes out this long after its submit was answered. */
    receiptDelayMs: 10,
  }
}

export function resetState(): void {
  state = emptyState()
  behaviour = defaultBehaviour()
}

export function setNextMessageId(messageId: number): void {
  nextMessageId = messageId
}

export function latestSession(): smpp.Session | undefined {
  return [...bound].at(-1)
}

export function recordSubmit(pdu: smpp.Pdu, session: number): AcceptedSubmit {
  const decoded = pdu.short_message as smpp.DecodedMessage | Buffer | undefined
  const message = decoded && !Buffer.isBuffer(decoded) ? decoded : { message: decoded ?? Buffer.alloc(0) }
  const elements = message.udh ?? []
  const header = elements.length > 0 ? Buffer.concat([Buffer.from([elements.reduce((n, e) => n + e.length, 0)]), ...elements]) : null
  let concat: AcceptedSubmit['concat'] = null
  for (const element of elements) {
    if (element[0] === 0x00) concat = { reference: element[2]!, total: element[3]!, sequence: element[4]! }
    if (element[0] === 0x08) concat = { reference: element.readUInt16BE(2), total: element[4]!, sequence: element[5]! }
  }
  const submit: AcceptedSubmit = {
    messageId: (nextMessageId++).toString(16).toUpperCase(),
    sourceAddr: pdu.source_addr ?? '',
    sourceAddrTon: pdu.source_addr_ton ?? 0,
    sourceAddrNpi: pdu.source_addr_npi ?? 0,
    destinationAddr: pdu.destination_addr ?? '',
    destAddrTon: pdu.dest_addr_ton ?? 0,
    destAddrNpi: pdu.dest_addr_npi ?? 0,
    esmClass: pdu.esm_class ?? 0,
    registeredDelivery: pdu.registered_delivery ?? 0,
    dataCoding: pdu.data_coding ?? 0,
    udh: header?.toString('hex') ?? null,
    concat,
    text: typeof message.message === 'string' ? message.message : message.message.toString('hex'),
    session,
    atMs: Math.round(performance.now() - startedAt),
  }
  state.submits.push(submit)
  return submit
}

export function submitStats(): SubmitStats {
  const bySession: Record<number, number> = {}
  const sessionsOfPart = new Map<string, { destinationAddr: string; sequence: number; sessions: number[] }>()
  for (const submit of state.submits) {
    const session = submit.session ?? 0
    bySession[session] = (bySession[session] ?? 0) + 1
    const sequence = submit.concat?.sequence ?? 1
    const key = `${submit.destinationAddr}/${sequence}`
    const part = sessionsOfPart.get(key) ?? { destinationAddr: submit.destinationAddr, sequence, sessions: [] }
    part.sessions.push(session)
    sessionsOfPart.set(key, part)
  }
  const repeated = [...sessionsOfPart.values()].filter((p) => p.sessions.length > 1).map((p) => ({ ...p, count: p.sessions.length }))
  return { accepted: state.submits.length, distinctParts: sessionsOfPart.size, bySession, repeated }
}
