/**
 * SMS encoding choice, segment counting and splitting, and the byte encodings handed to
 * carriers. The segment count is what a send is charged for, so analyzeSms and splitSms
 * apply the same packing rule and always agree.
 *
 * Empty text analyses to zero segments and splits into no parts; callers refuse empty
 * content before getting here, so that answer is only ever seen by direct callers.
 */
import type { SmsEncoding } from './carriers/carrier.js'
import { GSM7_BASIC, GSM7_CODE, GSM7_ESCAPE, GSM7_EXTENSION, gsm7Cost } from './gsm7.js'

export interface SmsAnalysis {
  encoding: SmsEncoding
  /** Parts the message is sent as; 0 for empty text. */
  segments: number
  /** septets (GSM-7) or UTF-16 units (UCS-2) of the whole text */
  units: number
  /** per-part capacity used: 160/153 or 70/67 */
  perPart: number
}

export const GSM7_SINGLE = 160
/** 160 less the 7 septets the concatenation header (UDH) takes in each part. */
export const GSM7_MULTI = 153
export const UCS2_SINGLE = 70
/** 70 less the 3 units the concatenation header (UDH) takes in each part. */
export const UCS2_MULTI = 67

/** Code units the UCS-2 "character" at i takes: 2 for a surrogate pair, else 1 (a lone surrogate stands alone). */
function ucs2Width(text: string, i: number, c: number): number {
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const next = text.charCodeAt(i + 1)
    if (next >= 0xdc00 && next <= 0xdfff) return 2
  }
  return 1
}

/** True when every character is in the GSM 03.38 basic or extension table. */
export function isGsm7(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    if (gsm7Cost(text.charCodeAt(i)) === 0) return false
  }
  return true
}

/**
 * Encoding, size and segment count in one pass: both packings are tracked side by side
 * because which one applies is known only at the end. A part is closed when the next
 * character would overflow it, so an escape sequence or a surrogate pair is never cut
 * and a part may hold fewer than 153/67 units.
 */
export function analyzeSms(text: string): SmsAnalysis {
  const length = text.length
  let gsm = true
  let septets = 0
  let gsmParts = 1
  let gsmFill = 0
  let ucsParts = 1
  let ucsFill = 0
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (gsm) {
      const cost = gsm7Cost(c)
      if (cost === 0) {
        gsm = false
      } else {
        septets += cost
        if (gsmFill + cost > GSM7_MULTI) {
          gsmParts++
          gsmFill = cost
        } else {
          gsmFill += cost
        }
      }
    }
    const width = ucs2Width(text, i, c)
    if (ucsFill + width > UCS2_MULTI) {
      ucsParts++
      ucsFill = width
    } else {
      ucsFill += width
    }
    // Surrogates are never GSM-7, so skipping the low half loses nothing on that side.
    i += width - 1
  }

  if (gsm) {
    const single = septets <= GSM7_SINGLE
    return {
      encoding: 'GSM-7',
      segments: septets === 0 ? 0 : single ? 1 : gsmParts,
      units: septets,
      perPart: single ? GSM7_SINGLE : GSM7_MULTI,
    }
  }
  const single = length <= UCS2_SINGLE
  return {
    encoding: 'UCS-2',
    segments: single ? 1 : ucsParts,
    units: length,
    perPart: single ? UCS2_SINGLE : UCS2_MULTI,
  }
}

/** The text of each part, in order; one element when the message fits in one. */
export function splitSms(text: string): { encoding: SmsEncoding; parts: string[] } {
  const { encoding, segments, perPart } = analyzeSms(text)
  if (segments === 0) return { encoding, parts: [] }
  if (segments === 1) return { encoding, parts: [text] }

  const gsm = encoding === 'GSM-7'
  const parts: string[] = []
  let start = 0
  let fill = 0
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i)
    // GSM-7 characters are single code units; a UCS-2 pair is two units costing two.
    const width = gsm ? 1 : ucs2Width(text, i, c)
    const cost = gsm ? gsm7Cost(c) : width
    if (fill + cost > perPart) {
      parts.push(text.slice(start, i))
      start = i
      fill = 0
    }
    fill += cost
    i += width
  }
  parts.push(text.slice(start))
  return { encoding, parts }
}

/**
 * GSM 03.38 default alphabet, one septet value per byte, unpacked (SMPP data_coding 0):
 * extension chars as 0x1B + code. Throws on a character outside the alphabet.
 */
export function encodeGsm7(text: string): Buffer {
  let size = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const cost = gsm7Cost(c)
    if (cost === 0) {
      const hex = c.toString(16).toUpperCase().padStart(4, '0')
      throw new RangeError(`U+${hex} at index ${i} is not in the GSM 03.38 alphabet`)
    }
    size += cost
  }
  const out = Buffer.alloc(size)
  let o = 0
  for (let i = 0; i < text.length; i++) {
    const code = GSM7_CODE[text.charCodeAt(i)]!
    if (code >= 0x100) {
      out[o++] = GSM7_ESCAPE
      out[o++] = code & 0x7f
    } else {
      out[o++] = code
    }
  }
  return out
}

/** Basic table by byte value; bytes above 0x7F are not septets and read as '?'. */
const BASIC_BY_BYTE: readonly string[] = Array.from({ length: 256 }, (_, b) => (b < 0x80 ? GSM7_BASIC[b]! : '?'))

/**
 * Unpacked septets to text. An escape followed by a code the extension table lacks reads
 * as that code's basic character (TS 23.038's fallback for unknown extensions); ESC ESC,
 * reserved for a further table, reads as a space as the standard asks; a trailing ESC
 * with nothing after it reads as '?'.
 */
export function decodeGsm7(bytes: Buffer): string {
  let text = ''
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    if (b !== GSM7_ESCAPE) {
      text += BASIC_BY_BYTE[b]!
      continue
    }
    if (i + 1 === bytes.length) {
      text += '?'
      break
    }
    const next = bytes[++i]!
    const extension = GSM7_EXTENSION.get(next)
    if (extension !== undefined) text += extension
    else if (next === GSM7_ESCAPE) text += ' '
    else text += BASIC_BY_BYTE[next]!
  }
  return text
}

/** UTF-16BE (SMPP data_coding 8). Surrogate pairs pass through as two units, as handsets expect. */
export function encodeUcs2(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16()
}

/** UTF-16BE to text. An odd trailing byte is half a unit and reads as '?'. */
export function decodeUcs2(bytes: Buffer): string {
  const even = bytes.length & ~1
  const units = Buffer.from(bytes.subarray(0, even)).swap16()
  const text = units.toString('utf16le')
  return even === bytes.length ? text : text + '?'
}
