import { describe, expect, it } from 'vitest'
import { ValidationFailed } from '../../../platform/problems.js'
import { parseTemplate, renderText, type RenderContact } from './template.js'

const plain = { trackLinks: false }
const tracked = { trackLinks: true }

const ada: RenderContact = { firstName: 'Ada', lastName: 'Lovelace', phoneNumber: '+14155550100', attributes: { plan: 'gold', age: 36, ratio: 2.5 } }
const nobody: RenderContact = { firstName: null, lastName: '', phoneNumber: '+14155550101', attributes: {} }
const shortLink = (index: number) => `https://s.example/l/0123456789abcd${index}`

function refusal(message: string, options = plain): { field: string; message: string }[] {
  try {
    parseTemplate(message, options)
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationFailed)
    return (err as ValidationFailed).errors ?? []
  }
  throw new Error(`${JSON.stringify(message)} was accepted`)
}

const refused = (message: string, options = plain) => refusal(message, options).map((e) => `${e.field}: ${e.message}`)

describe('parseTemplate', () => {
  it('reads text without placeholders as one literal piece, not personalised', () => {
    expect(parseTemplate('Sale ends {today} at 5', plain)).toEqual({ pieces: [{ text: 'Sale ends {today} at 5' }], links: [], personalised: false })
    expect(parseTemplate('', plain)).toEqual({ pieces: [], links: [], personalised: false })
  })

  it('reads every field, with fallbacks and whitespace trimmed around name and fallback', () => {
    const template = parseTemplate('Hi {{ firstName | there }} {{lastName}}, {{phoneNumber|}} {{attributes.Loyalty_Tier-2|none}}!', plain)
    expect(template).toEqual({
      pieces: [
        { text: 'Hi ' },
        { field: 'firstName', fallback: 'there' },
        { text: ' ' },
        { field: 'lastName', fallback: '' },
        { text: ', ' },
        { field: 'phoneNumber', fallback: '' },
        { text: ' ' },
        { field: { attribute: 'Loyalty_Tier-2' }, fallback: 'none' },
        { text: '!' },
      ],
      links: [],
      personalised: true,
    })
  })

  it('keeps a | inside a fallback and takes single braces as text', () => {
    expect(parseTemplate('{{firstName|a|b}}{x}', plain).pieces).toEqual([{ field: 'firstName', fallback: 'a|b' }, { text: '{x}' }])
  })

  it('accepts attribute names of 1 to 64 letters, digits, _ and -', () => {
    expect(parseTemplate(`{{attributes.${'a'.repeat(64)}}}`, plain).pieces).toEqual([{ field: { attribute: 'a'.repeat(64) }, fallback: '' }])
    // Quoted back in 64 characters at most.
    expect(refused(`{{attributes.${'a'.repeat(65)}}}`)).toEqual([`message: unknown placeholder 'attributes.${'a'.repeat(53)}…' at position 1`])
    expect(refused('{{attributes.}}')).toEqual(["message: unknown placeholder 'attributes.' at position 1"])
    expect(refused('{{attributes.a.b}}')).toEqual(["message: unknown placeholder 'attributes.a.b' at position 1"])
  })

  it('refuses an unknown placeholder, naming it and its position', () => {
    expect(refused('Hello {{foo}}')).toEqual(["message: unknown placeholder 'foo' at position 7"])
    expect(refused('{{ FirstName }}')).toEqual(["message: unknown placeholder 'FirstName' at position 1"])
    expect(refused('{{}}')).toEqual(["message: unknown placeholder '' at position 1"])
    expect(refused('{{{firstName}}}')).toEqual(["message: unknown placeholder '{firstName' at position 1"])
  })

  it('counts positions in characters, an emoji as one', () => {
    expect(refused('😀😀 {{foo}}')).toEqual(["message: unknown placeholder 'foo' at position 4"])
  })

  it("refuses an unclosed '{{', naming its position", () => {
    expect(refused('Hi {{firstName')).toEqual(["message: unclosed '{{' at position 4"])
    expect(refused('Hi {{firstName, {{lastName}}')).toEqual(["message: unclosed '{{' at position 4"])
  })

  it("refuses a '}}' without an opening '{{', naming its position", () => {
    expect(refused('Hi firstName}} there')).toEqual(["message: '}}' without an opening '{{' at position 13"])
    expect(refused('{{firstName}} }}')).toEqual(["message: '}}' without an opening '{{' at position 15"])
  })

  it("refuses a fallback holding '{{', naming where", () => {
    expect(refused('{{firstName|a {{lastName}}')).toEqual(["message: a fallback cannot contain '{{' at position 15"])
  })

  it('leaves URLs as text without tracking, placeholders in them included', () => {
    const template = parseTemplate('See https://x.example/?n={{firstName}}', plain)
    expect(template.links).toEqual([])
    expect(template.pieces).toEqual([{ text: 'See https://x.example/?n=' }, { field: 'firstName', fallback: '' }])
  })
})

describe('parseTemplate with tracked links', () => {
  it('makes each http(s) URL a link piece, in order, up to whitespace and without trailing punctuation', () => {
    const template = parseTemplate('Shop (https://shop.example/a?b=1), then HTTP://X.example/y.\nBye: http://z.example/"', tracked)
    expect(template).toEqual({
      pieces: [{ text: 'Shop (' }, { link: 0 }, { text: '), then ' }, { link: 1 }, { text: '.\nBye: ' }, { link: 2 }, { text: '"' }],
      links: ['https://shop.example/a?b=1', 'HTTP://X.example/y', 'http://z.example/'],
      personalised: true,
    })
  })

  it('strips every kind of trailing punctuation, however much of it', () => {
    expect(parseTemplate(`https://a.example/p.,;:!?)]'" end`, tracked).links).toEqual(['https://a.example/p'])
  })

  it('leaves a scheme with nothing after it as text', () => {
    expect(parseTemplate('type https:// then go', tracked)).toEqual({ pieces: [{ text: 'type https:// then go' }], links: [], personalised: false })
  })

  it('takes ten links and refuses the eleventh, naming its position', () => {
    const ten = Array.from({ length: 10 }, (_, i) => `https://x.example/${i}`).join(' ')
    expect(parseTemplate(ten, tracked).links).toHaveLength(10)
    expect(refused(`${ten} https://x.example/10`, tracked)).toEqual([`message: at most 10 links can be tracked; the 11th is at position ${ten.length + 2}`])
  })

  it('refuses a placeholder inside a tracked link, naming its position', () => {
    expect(refused('Go https://x.example/?n={{firstName}} now', tracked)).toEqual(['message: a tracked link cannot contain a placeholder at position 25'])
    expect(refused('https://x.example/}}', tracked)).toEqual(["message: '}}' without an opening '{{' at position 19"])
  })

  it('does not track a URL in a fallback, which is no part of the message text', () => {
    const template = parseTemplate('{{firstName|https://x.example}} https://y.example', tracked)
    expect(template.links).toEqual(['https://y.example'])
    expect(template.pieces).toEqual([{ field: 'firstName', fallback: 'https://x.example' }, { text: ' ' }, { link: 0 }])
  })
})

describe('renderText', () => {
  const template = parseTemplate('Hi {{firstName|there}} {{lastName}} ({{phoneNumber}}): {{attributes.plan|basic}}, {{attributes.age}}, {{attributes.ratio}}{{attributes.gone|?}}', plain)

  it("puts each field's value in its place", () => {
    expect(renderText(template, ada, shortLink)).toBe('Hi Ada Lovelace (+14155550100): gold, 36, 2.5?')
  })

  it('renders the fallback, or nothing, for null, empty and absent values', () => {
    expect(renderText(template, nobody, shortLink)).toBe('Hi there  (+14155550101): basic, , ?')
  })

  it("renders an attribute named like Object's properties only when the contact has it", () => {
    const own = parseTemplate('{{attributes.constructor|none}} {{attributes.__proto__|none}}', plain)
    expect(renderText(own, nobody, shortLink)).toBe('none none')
    expect(renderText(own, { ...nobody, attributes: JSON.parse('{"constructor":"c","__proto__":"p"}') }, shortLink)).toBe('c p')
  })

  it('renders numbers as String does', () => {
    const number = parseTemplate('{{attributes.n}}', plain)
    for (const n of [0, -7, 1e15, 0.1, -2.5, 123.456]) expect(renderText(number, { ...nobody, attributes: { n } }, shortLink)).toBe(String(n))
  })

  it("renders each tracked link as the recipient's short URL", () => {
    const links = parseTemplate('A https://a.example B https://b.example.', tracked)
    expect(renderText(links, ada, shortLink)).toBe('A https://s.example/l/0123456789abcd0 B https://s.example/l/0123456789abcd1.')
  })
})
