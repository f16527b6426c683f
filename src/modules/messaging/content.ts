import type { FieldError } from '../../platform/problems.js'
import type { SmsEncoding } from './carriers/carrier.js'
import { analyzeSms } from './encoding.js'

export const MAX_CONTENT_LENGTH = 1600
/** An alphanumeric sender id, as handsets show it (GSM 03.40 allows 11 characters). */
const ALPHANUMERIC_SENDER = /^[A-Za-z0-9]{1,11}$/
/** E.164: a plus, a country code that does not start with 0, at most 15 digits in all. */
const E164 = /^\+[1-9][0-9]{6,14}$/

export function senderIdError(senderId: string, field = 'senderId'): FieldError | null {
  if (ALPHANUMERIC_SENDER.test(senderId) || E164.test(senderId)) return null
  return { field, message: 'must be 1-11 letters and digits, or an E.164 number such as +14155550100' }
}

export interface Pricing {
  encoding: SmsEncoding
  /** Parts one recipient's copy is sent as; one credit each. */
  segments: number
}

export function price(content: string): Pricing {
  const { encoding, segments } = analyzeSms(content)
  return { encoding, segments }
}
