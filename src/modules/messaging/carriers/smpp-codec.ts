// SMPP 3.4 as the SMPP carrier writes and reads it: the smpp:// url, command statuses, submit_sm encoding, deliver_sm decoding, receipts.
import smpp from 'smpp'
import { decodeGsm7, decodeUcs2, encodeGsm7, encodeUcs2 } from '../encoding.js'
import type { CarrierReceipt, OutgoingPart } from './carrier.js'

export const STATUS = {
  ok: 0x00,
  invalidCommand: 0x03,
  systemError: 0x08,
  invalidDestination: 0x0b,
  queueFull: 0x14,
  submitFailed: 0x45,
  throttled: 0x58,
  temporaryAppError: 0x64,
  permanentAppError: 0x65,
} as const

export type RetryableStatus = 'queue_full' | 'throttled' | 'temporary_app_error'

/** Answers that say "not now" rather than "never": the part is sent again later. Named for metrics. */
export const RETRYABLE_STATUSES: ReadonlyMap<number, RetryableStatus> = new Map([
  [STATUS.queueFull, 'queue_full'],
  [STATUS.throttled, 'throttled'],
  [STATUS.temporaryAppError, 'temporary_app_error'],
])

/**
 * Answers that blame the SMSC rather than the message: the part may go to the route's
 * next carrier, which may well take it. Every other refusal is about the number or the
 * message and would be refused anywhere.
 */
export const CARRIER_FAULT_STATUSES: ReadonlySet<number> = new Set([STATUS.systemError, STATUS.submitFailed])

const STATUS_NAMES = new Map(Object.entries(smpp.errors).map(([name, value]) => [value, name]))

export const ESM_CLASS_RECEIPT = 0x04
export const ESM_CLASS_UDHI = 0x40
const TON_INTERNATIONAL = 1
const TON_ALPHANUMERIC = 5
const NPI_UNKNOWN = 0
const NPI_ISDN = 1
export const DATA_CODING_GSM7 = 0x00
const DATA_CODING_UCS2 = 0x08
/** sm_length is one octet and SMPP 3.4 caps short_message at 254. */
const SHORT_MESSAGE_MAX_BYTES = 254

/** Where a deliver_sm's message_payload TLV lands, as raw octets (see below). */
export const RAW_MESSAGE_PAYLOAD = 'message_payload_octets'

// deliver_sm bodies stay raw octets. The library would decode them with its own tables
// (data_coding 1 read as GSM, the UDH cut into pieces), while reassembly needs the UDH
// bytes and text must go through our GSM 03.38 table. Only the decoding of deliver_sm
// changes: an ESME receives that command and never sends it.
const deliverSm = smpp.commands.deliver_sm
if (deliverSm?.params?.short_message) {
  deliverSm.params.short_message = { type: deliverSm.params.short_message.type }
  deliverSm.tlvMap = { ...deliverSm.tlvMap, message_payload: RAW_MESSAGE_PAYLOAD }
}

const FINAL_STATES: Readonly<Record<string, CarrierReceipt['status']>> = {
  DELIVRD: 'delivered',
  UNDELIV: 'failed',
  REJECTD: 'failed',
  EXPIRED: 'failed',
  DELETED: 'failed',
  UNKNOWN: 'failed',
}

/** message_state TLV values, as the stat words of a receipt text. */
const MESSAGE_STATES = ['SCHEDULED', 'ENROUTE', 'DELIVRD', 'EXPIRED', 'DELETED', 'UNDELIV', 'ACCEPTD', 'UNKNOWN', 'REJECTD']

export function describeStatus(status: number): string {
  return `${STATUS_NAMES.get(status) ?? 'unknown status'} (0x${status.toString(16).toUpperCase().padStart(2, '0')})`
}

export function parseSmppUrl(url: string): { host: string; port: number; systemId: string; password: string } {
  const parsed = new URL(url)
  if (parsed.protocol !== 'smpp:' || !parsed.hostname || !parsed.username) {
    throw new Error('SMPP url must look like smpp://system_id:password@host:port')
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 2775,
    systemId: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  }
}

export function toSubmitSm(part: OutgoingPart): smpp.PduFields {
  const isGsm7 = part.encoding === 'GSM-7'
  const body = isGsm7 ? encodeGsm7(part.text) : encodeUcs2(part.text)
  const concat = part.concat
  const udh = concat && Buffer.from([0x05, 0x00, 0x03, concat.reference & 0xff, concat.total, concat.sequence])
  const shortMessage = udh ? Buffer.concat([udh, body]) : body
  if (shortMessage.length > SHORT_MESSAGE_MAX_BYTES) {
    throw new RangeError(`${shortMessage.length} octets exceed the ${SHORT_MESSAGE_MAX_BYTES} a short_message holds`)
  }
  const isE164Sender = /^\+\d+$/.test(part.from)
  return {
    source_addr_ton: isE164Sender ? TON_INTERNATIONAL : TON_ALPHANUMERIC,
    source_addr_npi: isE164Sender ? NPI_ISDN : NPI_UNKNOWN,
    source_addr: isE164Sender ? part.from.slice(1) : part.from,
    dest_addr_ton: TON_INTERNATIONAL,
    dest_addr_npi: NPI_ISDN,
    destination_addr: part.to.replace(/^\+/, ''),
    esm_class: udh ? ESM_CLASS_UDHI : 0,
    registered_delivery: 1,
    data_coding: isGsm7 ? DATA_CODING_GSM7 : DATA_CODING_UCS2,
    // A Buffer passes the library's message filter untouched: the octets are not encoded
    // again and data_coding is left as set here.
    short_message: shortMessage,
  }
}

/**
 * Numbers arrive without '+' and are taken as international, the form SMSCs deliver
 * in; an alphanumeric sender id stays as given.
 */
export function toPlatformAddress(address: string | undefined, ton: number | undefined): string {
  const value = address ?? ''
  return ton !== TON_ALPHANUMERIC && /^\d+$/.test(value) ? `+${value}` : value
}

/** The text after the user data header, and the concatenation element if there is one (IEI 0x00 or 0x08). */
export function splitUdh(octets: Buffer): { body: Buffer; concat: { reference: string; total: number; sequence: number } | undefined } {
  const headerLength = octets[0] ?? 0
  const header = octets.subarray(1, 1 + headerLength)
  let concat: { reference: string; total: number; sequence: number } | undefined
  for (let i = 0; i + 1 < header.length; i += 2 + header[i + 1]!) {
    const iei = header[i]!
    const element = header.subarray(i + 2, i + 2 + header[i + 1]!)
    if (iei === 0x00 && element.length === 3) {
      concat = { reference: `8:${element[0]}`, total: element[1]!, sequence: element[2]! }
    } else if (iei === 0x08 && element.length === 4) {
      concat = { reference: `16:${element.readUInt16BE(0)}`, total: element[2]!, sequence: element[3]! }
    }
  }
  const isValid = concat && concat.total > 1 && concat.sequence >= 1 && concat.sequence <= concat.total
  return { body: octets.subarray(1 + headerLength), concat: isValid ? concat : undefined }
}

export function decodeShortMessage(dataCoding: number, octets: Buffer): string {
  switch (dataCoding) {
    case 0x00:
      return decodeGsm7(octets)
    case 0x01: // IA5, i.e. ASCII
    case 0x03: // Latin-1
      return octets.toString('latin1')
    case 0x08:
      return decodeUcs2(octets)
  }
  // TS 23.038 coding groups: 0xF0-0xFF say GSM-7 or 8-bit data in bit 2; 0x10-0x3F name
  // the alphabet in bits 3-2 (0 GSM-7, 1 8-bit, 2 UCS-2).
  if ((dataCoding & 0xf0) === 0xf0) return dataCoding & 0x04 ? octets.toString('latin1') : decodeGsm7(octets)
  if (dataCoding < 0x40) {
    const alphabet = (dataCoding >> 2) & 0x03
    if (alphabet === 0) return decodeGsm7(octets)
    if (alphabet === 2) return decodeUcs2(octets)
  }
  return octets.toString('latin1')
}

/**
 * Reads an SMPP 3.4 Appendix B receipt: "id:X sub:001 dlvrd:001 submit date:YYMMDDhhmm
 * done date:YYMMDDhhmm stat:DELIVRD err:000 text:...". The receipted_message_id TLV wins
 * over the text's id: some SMSCs write the id there in another base than in the
 * submit_sm_resp. status is undefined for a state that is not final (ENROUTE, ACCEPTD).
 */
export function parseReceipt(
  text: string,
  receiptedMessageId: string | undefined,
  messageState: number | undefined,
): { carrierMessageId: string; status: CarrierReceipt['status'] | undefined; error: string | null } | undefined {
  // The user's text comes last and may hold anything, "stat:" included.
  const fields = text.split(/\btext:/i)[0] ?? ''
  const field = (name: string) => new RegExp(`\\b${name}:(\\S+)`, 'i').exec(fields)?.[1]
  const carrierMessageId = receiptedMessageId || field('id')
  const stat = field('stat')?.toUpperCase() ?? (messageState === undefined ? undefined : MESSAGE_STATES[messageState])
  if (!carrierMessageId || !stat) return undefined
  const status = FINAL_STATES[stat]
  const err = field('err')
  return { carrierMessageId, status, error: status === 'failed' ? (err ? `${stat} err:${err}` : stat) : null }
}
