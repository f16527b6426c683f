import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  analyzeSms,
  decodeGsm7,
  decodeUcs2,
  encodeGsm7,
  encodeUcs2,
  isGsm7,
  splitSms,
  type SmsAnalysis,
} from './encoding.js'
import { GSM7_CHARACTERS, GSM7_EXTENSION, gsm7Cost } from './gsm7.js'

const EXTENSION_CHARS = [...GSM7_EXTENSION.values()]
const BASIC_CHARS = [...GSM7_CHARACTERS].filter((ch) => !EXTENSION_CHARS.includes(ch))

function septets(text: string): number {
  let n = 0
  for (let i = 0; i < text.length; i++) n += gsm7Cost(text.charCodeAt(i))
  return n
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff
}
function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff
}

describe('analyzeSms: GSM-7', () => {
  it.each([
    [160, { encoding: 'GSM-7', segments: 1, units: 160, perPart: 160 }],
    [161, { encoding: 'GSM-7', segments: 2, units: 161, perPart: 153 }],
    [306, { encoding: 'GSM-7', segments: 2, units: 306, perPart: 153 }],
    [307, { encoding: 'GSM-7', segments: 3, units: 307, perPart: 153 }],
  ] as [number, SmsAnalysis][])('%i septets', (length, expected) => {
    const text = 'a'.repeat(length)
    expect(analyzeSms(text)).toEqual(expected)
    expect(splitSms(text).parts).toHaveLength(expected.segments)
  })

  it('keeps accented Latin letters, £, € and newlines in GSM-7', () => {
    for (const text of ['é', 'ñ', 'Ø', 'Ä', 'ü', '£', '€', '\n', 'Ç', 'Voilà: déjà vu, 5 £ ou 6 €\nÅse Øberg Ñoño']) {
      expect(analyzeSms(text).encoding, JSON.stringify(text)).toBe('GSM-7')
      expect(isGsm7(text)).toBe(true)
    }
    expect(analyzeSms('é ñ Ø Ä ü £\n')).toMatchObject({ units: 12, segments: 1 })
  })

  it('counts extension characters as two septets', () => {
    expect(analyzeSms('€')).toMatchObject({ encoding: 'GSM-7', units: 2 })
    expect(analyzeSms('{}[]~|^\\\f€')).toMatchObject({ encoding: 'GSM-7', units: 20 })
    expect(analyzeSms('€'.repeat(80))).toEqual({ encoding: 'GSM-7', segments: 1, units: 160, perPart: 160 })
    expect(analyzeSms('€'.repeat(81))).toEqual({ encoding: 'GSM-7', segments: 2, units: 162, perPart: 153 })
    expect(analyzeSms('a'.repeat(159) + '€')).toMatchObject({ units: 161, segments: 2 })
  })

  it('moves an extension character at septet 153 to the next part rather than split its escape', () => {
    const text = 'a'.repeat(152) + '{' + 'b'.repeat(20)
    const { encoding, parts } = splitSms(text)
    expect(encoding).toBe('GSM-7')
    expect(parts).toEqual(['a'.repeat(152), '{' + 'b'.repeat(20)])
    expect(analyzeSms(text).segments).toBe(2)
  })

  it('fills parts of 153 septets when nothing forces an early cut', () => {
    const text = 'x'.repeat(400)
    expect(splitSms(text).parts.map((p) => p.length)).toEqual([153, 153, 94])
  })

  it('can need an extra part because escapes are not split', () => {
    // 2 × 153 = 306 septets would fit exactly in two parts if an escape could be cut.
    const text = '€'.repeat(153)
    expect(septets(text)).toBe(306)
    const { parts } = splitSms(text)
    expect(parts.map(septets)).toEqual([152, 152, 2])
    expect(analyzeSms(text).segments).toBe(3)
  })
})

describe('analyzeSms: UCS-2', () => {
  it.each([
    [70, { encoding: 'UCS-2', segments: 1, units: 70, perPart: 70 }],
    [71, { encoding: 'UCS-2', segments: 2, units: 71, perPart: 67 }],
    [134, { encoding: 'UCS-2', segments: 2, units: 134, perPart: 67 }],
    [135, { encoding: 'UCS-2', segments: 3, units: 135, perPart: 67 }],
  ] as [number, SmsAnalysis][])('%i units', (length, expected) => {
    const text = 'я'.repeat(length)
    expect(analyzeSms(text)).toEqual(expected)
    expect(splitSms(text).parts).toHaveLength(expected.segments)
  })

  it('goes UCS-2 for a single character outside the alphabet', () => {
    const text = 'a'.repeat(100)
    for (const other of ['ç', '中', 'Ж', '😀', 'á', '’', '\t', '\x1b', '\u2126']) {
      const analysis = analyzeSms(text + other)
      expect(analysis.encoding, JSON.stringify(other)).toBe('UCS-2')
      expect(analysis.units).toBe(100 + other.length)
      expect(isGsm7(text + other)).toBe(false)
    }
    expect(analyzeSms('你好，世界')).toMatchObject({ encoding: 'UCS-2', units: 5, segments: 1 })
    expect(analyzeSms('Привет, мир')).toMatchObject({ encoding: 'UCS-2', units: 11, segments: 1 })
  })

  it('counts an emoji outside the BMP as two units', () => {
    expect(analyzeSms('😀')).toEqual({ encoding: 'UCS-2', segments: 1, units: 2, perPart: 70 })
    expect(analyzeSms('😀'.repeat(35))).toMatchObject({ units: 70, segments: 1 })
    expect(analyzeSms('😀'.repeat(36))).toMatchObject({ units: 72, segments: 2 })
  })

  it('never splits an emoji across parts', () => {
    const text = 'a'.repeat(66) + '😀' + 'b'.repeat(10)
    const { encoding, parts } = splitSms(text)
    expect(encoding).toBe('UCS-2')
    expect(parts).toEqual(['a'.repeat(66), '😀' + 'b'.repeat(10)])
    expect(analyzeSms(text)).toMatchObject({ units: 78, segments: 2 })
  })

  it('can need an extra part because surrogate pairs are not split', () => {
    // 134 units would fit in two parts of 67 if a pair could be cut.
    const text = '😀'.repeat(67)
    expect(text.length).toBe(134)
    expect(splitSms(text).parts.map((p) => p.length)).toEqual([66, 66, 2])
    expect(analyzeSms(text).segments).toBe(3)
  })

  it('keeps a lone surrogate as one unit of its own', () => {
    const text = 'a'.repeat(66) + '\ud83d' + 'b'.repeat(10)
    expect(analyzeSms(text)).toMatchObject({ encoding: 'UCS-2', units: 77, segments: 2 })
    expect(splitSms(text).parts).toEqual(['a'.repeat(66) + '\ud83d', 'b'.repeat(10)])
  })
})

describe('empty content', () => {
  it('has zero segments and no parts (callers refuse it before sending)', () => {
    expect(analyzeSms('')).toEqual({ encoding: 'GSM-7', segments: 0, units: 0, perPart: 160 })
    expect(splitSms('')).toEqual({ encoding: 'GSM-7', parts: [] })
    expect(isGsm7('')).toBe(true)
  })
})

describe('GSM-7 bytes', () => {
  it('has 128 basic characters less ESC and 10 extension characters', () => {
    expect(BASIC_CHARS).toHaveLength(127)
    expect(new Set(GSM7_CHARACTERS).size).toBe(137)
    expect(EXTENSION_CHARS.sort()).toEqual(['\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'].sort())
  })

  it('encodes to unpacked septet values, extension characters after ESC', () => {
    expect([...encodeGsm7('@£$Ç\nΔ_ ¡A§¿aà')]).toEqual([
      0x00, 0x01, 0x02, 0x09, 0x0a, 0x10, 0x11, 0x20, 0x40, 0x41, 0x5f, 0x60, 0x61, 0x7f,
    ])
    expect([...encodeGsm7('€{}[]~|^\\\f')]).toEqual([
      0x1b, 0x65, 0x1b, 0x28, 0x1b, 0x29, 0x1b, 0x3c, 0x1b, 0x3e, 0x1b, 0x3d, 0x1b, 0x40, 0x1b, 0x14, 0x1b, 0x2f,
      0x1b, 0x0a,
    ])
    expect(encodeGsm7('')).toHaveLength(0)
  })

  it('throws on a character outside the alphabet', () => {
    expect(() => encodeGsm7('ça va')).toThrow(/U\+00E7 at index 0/)
    expect(() => encodeGsm7('ok 😀')).toThrow(RangeError)
    expect(() => encodeGsm7('\x1b')).toThrow(RangeError)
  })

  it('round-trips every GSM character', () => {
    const all = GSM7_CHARACTERS
    const bytes = encodeGsm7(all)
    expect(bytes).toHaveLength(127 + 2 * 10)
    expect(bytes.every((b) => b <= 0x7f)).toBe(true)
    expect(decodeGsm7(bytes)).toBe(all)
    for (const ch of all) expect(decodeGsm7(encodeGsm7(ch))).toBe(ch)
  })

  it('reads unknown escapes as the basic character, and garbage as ?', () => {
    expect(decodeGsm7(Buffer.from([0x1b, 0x41, 0x62]))).toBe('Ab')
    expect(decodeGsm7(Buffer.from([0x1b, 0x00]))).toBe('@')
    expect(decodeGsm7(Buffer.from([0x1b, 0x1b, 0x61]))).toBe(' a')
    expect(decodeGsm7(Buffer.from([0x61, 0x1b]))).toBe('a?')
    expect(decodeGsm7(Buffer.from([0x61, 0x80, 0xff]))).toBe('a??')
    expect(decodeGsm7(Buffer.alloc(0))).toBe('')
  })
})

describe('UCS-2 bytes', () => {
  it('encodes UTF-16BE, surrogate pairs as two units', () => {
    expect([...encodeUcs2('A€')]).toEqual([0x00, 0x41, 0x20, 0xac])
    expect([...encodeUcs2('😀')]).toEqual([0xd8, 0x3d, 0xde, 0x00])
    expect(encodeUcs2('')).toHaveLength(0)
  })

  it('round-trips every GSM character and text outside the alphabet', () => {
    for (const text of [GSM7_CHARACTERS, '你好，世界 Привет 😀👍🏽 ç', '\ud800 lone \udc00']) {
      const bytes = encodeUcs2(text)
      expect(bytes).toHaveLength(text.length * 2)
      expect(decodeUcs2(bytes)).toBe(text)
    }
  })

  it('reads an odd trailing byte as ?', () => {
    expect(decodeUcs2(Buffer.from([0x00, 0x41, 0x00]))).toBe('A?')
  })

  it('leaves its input untouched', () => {
    const bytes = Buffer.from([0x00, 0x41])
    decodeUcs2(bytes)
    expect([...bytes]).toEqual([0x00, 0x41])
  })
})

describe('properties', () => {
  // size 'max': fast-check otherwise keeps strings to a few characters, never multipart.
  const gsmText = fc.string({ unit: fc.constantFrom(...GSM7_CHARACTERS), maxLength: 1600, size: 'max' })
  // Mostly basic characters so long messages are common, with extension characters mixed in.
  const gsmUnit = fc.oneof({ arbitrary: fc.constantFrom(...BASIC_CHARS), weight: 4 }, fc.constantFrom(...EXTENSION_CHARS))
  const gsmMixed = fc.string({ unit: gsmUnit, maxLength: 1600, size: 'max' })
  const unicodeText = fc.string({ unit: 'binary', maxLength: 800, size: 'max' })
  // GSM text with the odd character outside the alphabet, emoji included.
  const mostlyGsm = fc.string({
    unit: fc.oneof({ arbitrary: fc.constantFrom(...GSM7_CHARACTERS), weight: 20 }, fc.constantFrom('😀', 'ç', 'ж', '中')),
    maxLength: 1600,
    size: 'max',
  })
  // Lengths around the single/multipart thresholds (160/153 septets, 70/67 units).
  const nearGsmThreshold = fc.string({ unit: gsmUnit, minLength: 120, maxLength: 300, size: 'max' })
  const nearUcsThreshold = fc.string({ unit: fc.constantFrom('я', '😀', 'a'), minLength: 30, maxLength: 140, size: 'max' })
  const anyText = fc.oneof(gsmText, gsmMixed, unicodeText, mostlyGsm, nearGsmThreshold, nearUcsThreshold, fc.string())

  function checkSplit(text: string): void {
    const { encoding, parts } = splitSms(text)
    const analysis = analyzeSms(text)
    expect(parts.join('')).toBe(text)
    expect(analysis.segments).toBe(parts.length)
    expect(analysis.encoding).toBe(encoding)
    expect(encoding === 'GSM-7').toBe(isGsm7(text))
    const measure = encoding === 'GSM-7' ? septets : (p: string) => p.length
    expect(parts.reduce((sum, p) => sum + measure(p), 0)).toBe(analysis.units)
    const capacity = encoding === 'GSM-7' ? (parts.length > 1 ? 153 : 160) : parts.length > 1 ? 67 : 70
    expect(analysis.perPart).toBe(capacity)
    for (const part of parts) {
      expect(part.length).toBeGreaterThan(0)
      expect(measure(part)).toBeLessThanOrEqual(capacity)
      if (encoding === 'GSM-7') expect(encodeGsm7(part)).toHaveLength(septets(part))
    }
    for (let k = 1; k < parts.length; k++) {
      const previous = parts[k - 1]!
      const splitsPair = isHigh(previous.charCodeAt(previous.length - 1)) && isLow(parts[k]!.charCodeAt(0))
      expect(splitsPair).toBe(false)
    }
  }

  it('splits into parts that rejoin to the text, fit their capacity and match the count', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        checkSplit(text)
        for (const part of splitSms(text).parts) expect(isLow(part.charCodeAt(0))).toBe(false)
      }),
      { numRuns: 500 },
    )
  })

  it('holds for arbitrary UTF-16, lone surrogates included', () => {
    const units = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 400, size: 'max' })
    fc.assert(fc.property(units, checkSplit), { numRuns: 300 })
  })

  it('round-trips the byte encodings', () => {
    fc.assert(
      fc.property(gsmMixed, (text) => {
        expect(decodeGsm7(encodeGsm7(text))).toBe(text)
      }),
    )
    fc.assert(
      fc.property(unicodeText, (text) => {
        expect(decodeUcs2(encodeUcs2(text))).toBe(text)
      }),
    )
  })
})

describe('speed', () => {
  it('analyses 1,600 characters quickly', () => {
    const texts = ['a'.repeat(1599) + '€', 'я'.repeat(1600), 'a'.repeat(800) + '😀'.repeat(400)]
    for (const text of texts) analyzeSms(text)
    const start = performance.now()
    for (let n = 0; n < 3000; n++) analyzeSms(texts[n % 3]!)
    // ~10 µs each on a laptop; the bound is loose so a busy CI machine does not flake.
    expect((performance.now() - start) / 3000).toBeLessThan(1)
  })
})
