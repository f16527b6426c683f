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
import { sendEnquireLink, sendInbound, sendReceipt } from './deliveries.js'
import { behaviour, bound, password, recordSubmit, resetState, setNextMessageId, state, submitStats, systemId } from './state.js'
import type { InboundSpec, ReceiptMode } from './types.js'

export type { AcceptedSubmit, InboundSpec, ReceiptMode, SmscState, SubmitStats } from './types.js'

const ESME_RINVBNDSTS = 0x04
const ESME_RINVDSTADR = 0x0b
const ESME_RBINDFAIL = 0x0d
const ESME_RTHROTTLED = 0x58

let sessionsAccepted = 0

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
      resetState()
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
      setNextMessageId(command.messageId)
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
