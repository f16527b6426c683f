/**
 * A test SMSC speaking SMPP 3.4 on 127.0.0.1, run as a process of its own so the adapter
 * under test meets a real peer over a real socket. Arguments: the system_id and password
 * it accepts, and optionally the first message id it hands out (a number; 0x5A000000 when
 * left out). It prints {"event":"ready","port":N} once listening, then takes one JSON
 * command per stdin line and answers each with one stdout line (see control.ts). It exits
 * when stdin closes, so it never outlives the test that started it.
 *
 * Texts are decoded and encoded with the smpp package's own GSM 03.38 and UCS-2 tables,
 * not the platform's, so a test checks the adapter's bytes against a second opinion.
 */
import { createInterface } from 'node:readline'
import smpp from 'smpp'

const [systemId = '', password = '', firstMessageId] = process.argv.slice(2)
const DEFAULT_FIRST_MESSAGE_ID = 0x5a000000
const startedAt = performance.now()

const ESME_ROK = 0x00
const ESME_RINVBNDSTS = 0x04
const ESME_RINVDSTADR = 0x0b
const ESME_RBINDFAIL = 0x0d
const ESME_RTHROTTLED = 0x58
const ESM_CLASS_RECEIPT = 0x04
const ESM_CLASS_UDHI = 0x40
const REDELIVER_MS = 50
const REDELIVER_ATTEMPTS = 5

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

let state: SmscState = emptyState()
let behaviour = defaultBehaviour()
let nextMessageId = firstMessageId === undefined ? DEFAULT_FIRST_MESSAGE_ID : Number(firstMessageId)
let sessionsAccepted = 0
const bound = new Set<smpp.Session>()

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

function latestSession(): smpp.Session | undefined {
  return [...bound].at(-1)
}

const server = smpp.createServer((session) => {
  const sessionNumber = ++sessionsAccepted
  let isBound = false
  let isDropping = false
  let discardedHere = 0
  session.on('error', () => {})
  session.on('close', () => bound.delete(session))

  session.on('bind_transceiver', (pdu: smpp.Pdu) => {
    const isAccepted = pdu.system_id === systemId && pdu.password === password
    state.binds.push({ systemId: pdu.system_id ?? '', isAccepted, atMs: Date.now() })
    if (!isAccepted) {
      session.send(pdu.response({ command_status: ESME_RBINDFAIL }))
      return
    }
    isBound = true
    bound.add(session)
    session.send(pdu.response({ system_id: 'test-smsc' }))
  })

  session.on('enquire_link', (pdu: smpp.Pdu) => {
    state.enquireLinksReceived++
    if (behaviour.answerEnquireLinks) session.send(pdu.response())
  })

  session.on('unbind', (pdu: smpp.Pdu) => {
    state.unbindsReceived++
    bound.delete(session)
    session.send(pdu.response(), () => session.close())
  })

  // An accepted submit is recorded on arrival and answered later with a latency set: the
  // SMSC holds it even when the connection dies before the answer goes out.
  const answer = (response: smpp.Pdu, then?: () => void) => {
    const latency = behaviour.submitLatencyMs
    if (latency === 0) {
      session.send(response)
      then?.()
      return
    }
    setTimeout(() => {
      session.send(response)
      then?.()
    }, latency)
  }

  session.on('submit_sm', (pdu: smpp.Pdu) => {
    if (!isBound) return void answer(pdu.response({ command_status: ESME_RINVBNDSTS }))
    // After a simulated crash nothing more is answered: these submits are lost in the SMSC.
    if (isDropping) {
      state.discarded++
      if (++discardedHere === behaviour.drop?.discardBeforeDrop) dropConnection(session)
      return
    }
    if (behaviour.throttleNext > 0) {
      behaviour.throttleNext--
      state.throttled++
      return void answer(pdu.response({ command_status: ESME_RTHROTTLED }))
    }
    if (behaviour.refusedDestinations.has(pdu.destination_addr ?? '')) {
      return void answer(pdu.response({ command_status: ESME_RINVDSTADR }))
    }
    const submit = recordSubmit(pdu, sessionNumber)
    const sendsReceipt = behaviour.receipts !== 'off' && (submit.registeredDelivery & 0x01) !== 0
    answer(pdu.response({ message_id: submit.messageId }), sendsReceipt ? () => setTimeout(() => void sendReceipt(submit), behaviour.receiptDelayMs) : undefined)
    const drop = behaviour.drop
    if (drop && --drop.afterAccepting === 0) {
      isDropping = true
      if (drop.discardBeforeDrop === 0) dropConnection(session)
    }
  })
})

/** Closes after the answers already written, as the kernel does for a process that died. */
function dropConnection(session: smpp.Session): void {
  behaviour.drop = undefined
  bound.delete(session)
  session.socket.end()
  setTimeout(() => session.destroy(), 1000).unref()
}

function recordSubmit(pdu: smpp.Pdu, session: number): AcceptedSubmit {
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

function submitStats(): SubmitStats {
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

function receiptTime(at: Date): string {
  return at.toISOString().replace(/\D/g, '').slice(2, 12)
}

function sendReceipt(submit: AcceptedSubmit): Promise<number> {
  const isDelivered = !behaviour.undelivered.has(submit.destinationAddr)
  const withTlv = behaviour.receipts === 'on'
  // With the TLV the text gives the id in decimal, as some SMSCs do: the TLV must win.
  const textId = withTlv ? String(parseInt(submit.messageId, 16)) : submit.messageId
  const at = receiptTime(new Date())
  const stat = isDelivered ? 'DELIVRD' : 'UNDELIV'
  const text =
    `id:${textId} sub:001 dlvrd:${isDelivered ? '001' : '000'} submit date:${at} done date:${at} ` +
    `stat:${stat} err:${isDelivered ? '000' : '001'} text:${submit.text.slice(0, 20)}`
  return deliver('receipt', submit.messageId, {
    source_addr_ton: 1,
    source_addr_npi: 1,
    source_addr: submit.destinationAddr,
    dest_addr_ton: submit.sourceAddrTon,
    dest_addr_npi: submit.sourceAddrNpi,
    destination_addr: submit.sourceAddr,
    esm_class: ESM_CLASS_RECEIPT,
    data_coding: 0,
    short_message: Buffer.from(text, 'latin1'),
    ...(withTlv ? { receipted_message_id: submit.messageId, message_state: isDelivered ? 2 : 5 } : {}),
  })
}

/**
 * Sends a deliver_sm on the newest bound session and resolves with the first answer's
 * status; an error answer (or no session) makes it offer the same PDU again later, as an
 * SMSC keeps a message until the ESME takes it.
 */
function deliver(kind: 'receipt' | 'inbound', messageId: string | null, fields: smpp.PduFields): Promise<number> {
  return new Promise((resolve) => {
    let attempts = 0
    const attempt = () => {
      attempts++
      const session = latestSession()
      const sent = session?.deliver_sm({ ...fields }, (resp) => {
        state.deliveries.push({ kind, messageId, status: resp.command_status })
        resolve(resp.command_status)
        if (resp.command_status !== ESME_ROK && attempts < REDELIVER_ATTEMPTS) setTimeout(attempt, REDELIVER_MS)
      })
      if (!sent && attempts < REDELIVER_ATTEMPTS * 10) setTimeout(attempt, REDELIVER_MS)
    }
    attempt()
  })
}

/** Cuts text into n pieces of about equal length. */
function cutText(text: string, n: number): string[] {
  const size = Math.ceil(text.length / n)
  return Array.from({ length: n }, (_, i) => text.slice(i * size, (i + 1) * size))
}

async function sendInbound(spec: InboundSpec): Promise<{ statuses: number[] }> {
  const parts = spec.parts ?? 1
  const reference = spec.reference ?? Math.floor(Math.random() * 0xff)
  const isUcs2 = spec.encoding === 'UCS-2'
  const pdus = cutText(spec.text, parts).map((chunk, i) => {
    const body = isUcs2 ? smpp.encodings.UCS2.encode(chunk) : smpp.encodings.ASCII.encode(chunk)
    const udh =
      parts === 1
        ? undefined
        : spec.referenceBits === 16
          ? Buffer.from([0x06, 0x08, 0x04, (reference >> 8) & 0xff, reference & 0xff, parts, i + 1])
          : Buffer.from([0x05, 0x00, 0x03, reference & 0xff, parts, i + 1])
    return {
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: spec.from.replace(/^\+/, ''),
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      destination_addr: spec.to.replace(/^\+/, ''),
      esm_class: udh ? ESM_CLASS_UDHI : 0,
      data_coding: isUcs2 ? 8 : 0,
      short_message: udh ? Buffer.concat([udh, body]) : body,
    }
  })
  if (spec.isReversed) pdus.reverse()
  const statuses: number[] = []
  for (const fields of pdus) statuses.push(await deliver('inbound', null, fields))
  return { statuses }
}

function sendEnquireLink(): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const session = latestSession()
    if (!session) return reject(new Error('no bound session'))
    const timer = setTimeout(() => reject(new Error('no enquire_link_resp')), 2000)
    session.enquire_link({}, (resp) => {
      clearTimeout(timer)
      resolve({ status: resp.command_status })
    })
  })
}

type Command =
  | { command: 'reset' }
  | { command: 'throttleNext'; count: number }
  | { command: 'dropAfterAccepting'; count: number; discardBeforeDrop: number }
  | { command: 'setReceipts'; mode: ReceiptMode; undelivered: string[] }
  | { command: 'refuseDestinations'; numbers: string[] }
  | { command: 'answerEnquireLinks'; isAnswering: boolean }
  | { command: 'sendInbound'; message: InboundSpec }
  | { command: 'sendEnquireLink' }
  | { command: 'state' }
  | { command: 'setNextMessageId'; messageId: number }
  | { command: 'setSubmitLatency'; ms: number }
  | { command: 'setReceiptDelay'; ms: number }
  | { command: 'submitStats' }

async function run(command: Command): Promise<unknown> {
  switch (command.command) {
    case 'reset':
      for (const session of server.sessions) session.destroy()
      bound.clear()
      state = emptyState()
      behaviour = defaultBehaviour()
      return null
    case 'throttleNext':
      behaviour.throttleNext = command.count
      return null
    case 'dropAfterAccepting':
      behaviour.drop = { afterAccepting: command.count, discardBeforeDrop: command.discardBeforeDrop }
      return null
    case 'setReceipts':
      behaviour.receipts = command.mode
      behaviour.undelivered = new Set(command.undelivered.map((n) => n.replace(/^\+/, '')))
      return null
    case 'refuseDestinations':
      behaviour.refusedDestinations = new Set(command.numbers.map((n) => n.replace(/^\+/, '')))
      return null
    case 'answerEnquireLinks':
      behaviour.answerEnquireLinks = command.isAnswering
      return null
    case 'sendInbound':
      return sendInbound(command.message)
    case 'sendEnquireLink':
      return sendEnquireLink()
    case 'state':
      return { ...state, boundSessions: bound.size }
    case 'setNextMessageId':
      nextMessageId = command.messageId
      return null
    case 'setSubmitLatency':
      behaviour.submitLatencyMs = command.ms
      return null
    case 'setReceiptDelay':
      behaviour.receiptDelayMs = command.ms
      return null
    case 'submitStats':
      return submitStats()
  }
}

function write(line: unknown): void {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  write({ event: 'ready', port: typeof address === 'object' && address ? address.port : 0 })
})

const input = createInterface({ input: process.stdin })
input.on('line', (line) => {
  const { id, ...command } = JSON.parse(line) as Command & { id: number }
  run(command as Command).then(
    (result) => write({ id, result }),
    (err: Error) => write({ id, error: err.message }),
  )
})
input.on('close', () => process.exit(0))
