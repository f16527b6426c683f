/**
 * --message: the broadcast's text, and what each recipient's own text should cost.
 *
 *   plain:        one text for every recipient, 'Flash sale today only: …' (GSM-7, one
 *                 segment), as before --message existed: credits = Σ route price × the
 *                 message's segments.
 *   personalised: 'Hi {{firstName}}, flash sale in {{attributes.city}} today only: …',
 *                 rendered by the server per recipient in SQL while queueing. The names and
 *                 cities of the generated contacts (contacts.ts) include characters outside
 *                 GSM-7 (Zoë, Łukasz, María, São Paulo, Kraków), so the texts come out as a
 *                 mix of GSM-7 in one segment and UCS-2 in two: credits = Σ route price ×
 *                 that recipient's segments.
 *
 * The expectation is computed here, independently of the server's template code: the
 * same generator as contacts.ts (deterministic by index) gives each contact's fields,
 * a small renderer below fills the placeholders, and analyzeSms (the code the server
 * charges with) counts the segments.
 */
import { analyzeSms } from '../../src/modules/messaging/index.js'
import type { GeneratedContact } from './contacts.js'

export type MessageMode = 'plain' | 'personalised'

export const MESSAGE_MODES: readonly MessageMode[] = ['plain', 'personalised']

/** The broadcast's message under each --message. */
export const MESSAGES: Record<MessageMode, string> = {
  plain: 'Flash sale today only: 30% off everything. Reply STOP to opt out',
  personalised: 'Hi {{firstName}}, flash sale in {{attributes.city}} today only: 30% off everything. Reply STOP to opt out',
}

// {{name}} or {{name|fallback}}; names and fallbacks trimmed, as the server's parser does.
const PLACEHOLDER = /\{\{([^{}|]*)(?:\|([^{}]*))?\}\}/g

/** The text a recipient should get: each placeholder the contact's field, or its fallback when that is empty. */
export function renderFor(message: string, contact: GeneratedContact): string {
  return message.replace(PLACEHOLDER, (whole, rawName: string, fallback: string | undefined) => {
    const name = rawName.trim()
    const attribute = /^attributes\.(.+)$/.exec(name)?.[1]
    const value =
      name === 'firstName' ? contact.firstName
      : name === 'lastName' ? contact.lastName
      : name === 'phoneNumber' ? contact.phoneNumber
      : attribute !== undefined ? (contact.attributes as Record<string, string | undefined>)[attribute]
      : undefined
    if (value === undefined && attribute === undefined) throw new Error(`--message: the bench cannot render ${whole}`)
    return value || (fallback ?? '').trim()
  })
}

/** Texts by encoding and segments, e.g. "GSM-7, 1 segment" -> recipients. */
export type TextTally = Record<string, number>

/** Counts segments per distinct text (the generated contacts repeat a few hundred of them). */
export class SegmentCounter {
  private readonly seen = new Map<string, { key: string; segments: number }>()
  readonly tally: TextTally = {}

  /** The segments `text` is charged as, tallied by encoding and segments. */
  count(text: string): number {
    let known = this.seen.get(text)
    if (!known) {
      const { encoding, segments } = analyzeSms(text)
      known = { key: `${encoding}, ${segments} segment${segments === 1 ? '' : 's'}`, segments }
      this.seen.set(text, known)
    }
    this.tally[known.key] = (this.tally[known.key] ?? 0) + 1
    return known.segments
  }
}

/** "GSM-7, 1 segment 12,000; UCS-2, 2 segments 8,000" */
export function describeTally(tally: TextTally): string {
  return Object.entries(tally)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, n]) => `${key} ${n.toLocaleString('en')}`)
    .join('; ')
}
