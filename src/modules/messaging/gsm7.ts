/**
 * GSM 03.38 (3GPP TS 23.038) default alphabet and its extension table, with the lookups
 * the SMS encoder needs. Every character of both tables lies in the BMP, so one UTF-16
 * code unit is one character here.
 */

/** Septet that switches the next septet to the extension table; never a character of its own. */
export const GSM7_ESCAPE = 0x1b

/**
 * The basic table indexed by septet value. Position 0x1B holds ESC only to keep the
 * indices right: it is excluded from the lookups, so a U+001B in the input is not GSM-7.
 * Greek capitals are written as escapes because they look like Latin letters.
 */
export const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅå' +
  '\u0394_\u03a6\u0393\u039b\u03a9\u03a0\u03a8\u03a3\u0398\u039e\x1bÆæßÉ' +
  ' !"#¤%&\'()*+,-./' +
  '0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNO' +
  'PQRSTUVWXYZÄÖÑÜ§' +
  '¿abcdefghijklmno' +
  'pqrstuvwxyzäöñüà'

/** Extension table: septet value (sent after ESC) to character. */
export const GSM7_EXTENSION: ReadonlyMap<number, string> = new Map([
  [0x0a, '\f'],
  [0x14, '^'],
  [0x28, '{'],
  [0x29, '}'],
  [0x2f, '\\'],
  [0x3c, '['],
  [0x3d, '~'],
  [0x3e, ']'],
  [0x40, '|'],
  [0x65, '€'],
])

/** Every character either table can carry, basic first; ESC excluded. */
export const GSM7_CHARACTERS: string =
  GSM7_BASIC.replace('\x1b', '') + [...GSM7_EXTENSION.values()].join('')

let highestCode = 0
for (const ch of GSM7_CHARACTERS) highestCode = Math.max(highestCode, ch.charCodeAt(0))

/** Table size: char codes at or above it are outside the alphabet. */
export const GSM7_TABLE_SIZE = highestCode + 1

/**
 * Septets a UTF-16 code unit costs, indexed by char code: 0 outside the alphabet, 1 for
 * the basic table, 2 for the extension table (ESC + septet). A typed array rather than a
 * Map because the analyser runs on every send and this keeps the lookup a plain load.
 */
export const GSM7_COST = new Uint8Array(GSM7_TABLE_SIZE)

/**
 * Septet value by char code: -1 outside the alphabet, 0x00-0x7F for the basic table,
 * 0x100 | septet for the extension table (the septet that follows ESC).
 */
export const GSM7_CODE = new Int16Array(GSM7_TABLE_SIZE).fill(-1)

for (let septet = 0; septet < GSM7_BASIC.length; septet++) {
  if (septet === GSM7_ESCAPE) continue
  const c = GSM7_BASIC.charCodeAt(septet)
  GSM7_COST[c] = 1
  GSM7_CODE[c] = septet
}
for (const [septet, ch] of GSM7_EXTENSION) {
  const c = ch.charCodeAt(0)
  GSM7_COST[c] = 2
  GSM7_CODE[c] = 0x100 | septet
}

/** Septets the code unit costs in GSM-7, or 0 when it is outside the alphabet. */
export function gsm7Cost(charCode: number): number {
  return charCode < GSM7_TABLE_SIZE ? GSM7_COST[charCode]! : 0
}
