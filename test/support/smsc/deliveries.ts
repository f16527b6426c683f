// The deliver_sm traffic the test SMSC starts itself: receipts, inbound messages, and its own enquire_link.
import smpp from 'smpp'
import { behaviour, latestSession, state } from './state.js'
import type { AcceptedSubmit, InboundSpec } from './types.js'

const ESME_ROK = 0x00
const ESM_CLASS_RECEIPT = 0x04
const ESM_CLASS_UDHI = 0x40
const REDELIVER_MS = 50
const REDELIVER_ATTEMPTS = 5

function receiptTime(at: Date): string {
  return at.toISOString().replace(/\D/g, '').slice(2, 12)
}

export function sendReceipt(submit: AcceptedSubmit): Promise<number> {
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

export async function sendInbound(spec: InboundSpec): Promise<{ statuses: number[] }> {
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

export function sendEnquireLink(): Promise<{ status: number }> {
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
