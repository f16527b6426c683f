/**
 * A broadcast's message as a template: literal text, contact fields ({{firstName|there}})
 * and, when links are tracked, the message's URLs, each replaced by a recipient's short
 * link. Parsed once when the broadcast is written (a 422 names what is wrong and where),
 * rendered here for one recipient and in template-sql.ts for all of them in one statement.
 */
import { ValidationFailed } from '../../../platform/problems.js'

export type TemplateField = 'firstName' | 'lastName' | 'phoneNumber' | { attribute: string }
export type Piece = { text: string } | { field: TemplateField; fallback: string } | { link: number }

export interface Template {
  pieces: Piece[]
  /** The tracked URLs in order (empty without trackLinks). */
  links: string[]
  /** Whether any field placeholder or tracked link is present: then each recipient's text is its own. */
  personalised: boolean
}

export interface RenderContact {
  firstName: string | null
  lastName: string | null
  phoneNumber: string
  attributes: Record<string, string | number>
}

/** The tracked link's path code length: 14 lowercase hex characters of randomness, then one digit, the link's index. */
export const LINK_CODE_LENGTH = 14

/** One digit of index per link in its path: at most 10. */
const MAX_LINKS = 10
const NAMED_FIELDS: readonly string[] = ['firstName', 'lastName', 'phoneNumber']
const ATTRIBUTE = /^attributes\.([A-Za-z0-9_-]{1,64})$/
const URL_SCHEME = /https?:\/\//iy
// Punctuation that ends a sentence or closes a bracket around a URL more often than it ends the URL.
const URL_TRAILER = /[.,;:!?)\]'"]+$/
// Quoted back in an error: the text between braces may be long.
const QUOTED_MAX = 64

/**
 * Throws ValidationFailed (field 'message') naming the 1-based character position (in
 * code points, so an emoji counts as one), e.g. "unknown placeholder 'foo' at position 7".
 * A placeholder inside a tracked link is reported at the placeholder's `{{`.
 */
export function parseTemplate(message: string, options: { trackLinks: boolean }): Template {
  const pieces: Piece[] = []
  const links: string[] = []
  let textStart = 0
  const endText = (at: number) => {
    if (at > textStart) pieces.push({ text: message.slice(textStart, at) })
  }

  let i = 0
  while (i < message.length) {
    if (message.startsWith('{{', i)) {
      const close = message.indexOf('}}', i + 2)
      if (close < 0) throw invalid(`unclosed '{{' at position ${position(message, i)}`)
      endText(i)
      pieces.push(parsePlaceholder(message, i, close))
      i = textStart = close + 2
    } else if (message.startsWith('}}', i)) {
      throw invalid(`'}}' without an opening '{{' at position ${position(message, i)}`)
    } else if (options.trackLinks && schemeEnd(message, i) !== undefined) {
      const end = urlEnd(message, i)
      const url = message.slice(i, end)
      const opening = url.indexOf('{{')
      if (opening >= 0) throw invalid(`a tracked link cannot contain a placeholder at position ${position(message, i + opening)}`)
      const closing = url.indexOf('}}')
      if (closing >= 0) throw invalid(`'}}' without an opening '{{' at position ${position(message, i + closing)}`)
      if (end === schemeEnd(message, i)) {
        // A scheme with nothing after it is no link: plain text.
        i = end
        continue
      }
      if (links.length === MAX_LINKS) throw invalid(`at most ${MAX_LINKS} links can be tracked; the 11th is at position ${position(message, i)}`)
      endText(i)
      pieces.push({ link: links.length })
      links.push(url)
      i = textStart = end
    } else {
      i++
    }
  }
  endText(message.length)
  return { pieces, links, personalised: pieces.some((piece) => !('text' in piece)) }
}

/** `link(i)` gives the i-th tracked link's short URL for this recipient. */
export function renderText(template: Template, contact: RenderContact, link: (index: number) => string): string {
  let text = ''
  for (const piece of template.pieces) {
    if ('text' in piece) text += piece.text
    else if ('link' in piece) text += link(piece.link)
    else text += fieldValue(contact, piece.field) || piece.fallback
  }
  return text
}

/** The field's text; '' when missing (null, empty or absent). */
function fieldValue(contact: RenderContact, field: TemplateField): string {
  if (field === 'firstName') return contact.firstName ?? ''
  if (field === 'lastName') return contact.lastName ?? ''
  if (field === 'phoneNumber') return contact.phoneNumber
  // Own properties only: an attribute named "constructor" is not Object's.
  const value = Object.hasOwn(contact.attributes, field.attribute) ? contact.attributes[field.attribute] : undefined
  if (typeof value === 'number') return String(value)
  return typeof value === 'string' ? value : ''
}

/** The placeholder between `{{` at `start` and `}}` at `close`. */
function parsePlaceholder(message: string, start: number, close: number): Piece {
  const inner = message.slice(start + 2, close)
  const bar = inner.indexOf('|')
  const rawName = bar < 0 ? inner : inner.slice(0, bar)
  // A second `{{` before this `}}`: the first one was never closed.
  if (rawName.includes('{{')) throw invalid(`unclosed '{{' at position ${position(message, start)}`)
  const field = toField(rawName.trim())
  if (!field) throw invalid(`unknown placeholder '${quoted(rawName.trim())}' at position ${position(message, start)}`)
  if (bar < 0) return { field, fallback: '' }
  const fallback = inner.slice(bar + 1)
  const nested = fallback.indexOf('{{')
  if (nested >= 0) throw invalid(`a fallback cannot contain '{{' at position ${position(message, start + 2 + bar + 1 + nested)}`)
  return { field, fallback: fallback.trim() }
}

function toField(name: string): TemplateField | undefined {
  if (NAMED_FIELDS.includes(name)) return name as TemplateField
  const attribute = ATTRIBUTE.exec(name)?.[1]
  return attribute === undefined ? undefined : { attribute }
}

/** Where an http:// or https:// at `start` ends, if one is there. */
function schemeEnd(message: string, start: number): number | undefined {
  URL_SCHEME.lastIndex = start
  return URL_SCHEME.test(message) ? URL_SCHEME.lastIndex : undefined
}

/** Where the URL starting at `start` ends: at whitespace, less trailing punctuation. */
function urlEnd(message: string, start: number): number {
  let end = start
  while (end < message.length && !/\s/.test(message[end]!)) end++
  const trailer = URL_TRAILER.exec(message.slice(start, end))
  return trailer ? start + trailer.index : end
}

/** 1-based position in code points of the UTF-16 index `index`. */
function position(message: string, index: number): number {
  let count = 1
  for (const _ of message.slice(0, index)) count++
  return count
}

function quoted(text: string): string {
  const chars = [...text]
  return chars.length > QUOTED_MAX ? `${chars.slice(0, QUOTED_MAX).join('')}…` : text
}

function invalid(message: string): ValidationFailed {
  return ValidationFailed.field('message', message)
}

/** Whether some contact's text would be empty: no text, no link, and only fields that can be missing, with no fallback. */
export function mayRenderEmpty(template: Template): boolean {
  return template.pieces.every((piece) => ('field' in piece && piece.field !== 'phoneNumber' && piece.fallback === '') || ('text' in piece && piece.text === ''))
}
