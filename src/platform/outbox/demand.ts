import type { EventType } from './events.js'

/**
 * Whether anything will read events of a type for an account. High-volume producers (a
 * broadcast's per-recipient events) ask before writing: a million-recipient broadcast
 * must not write millions of outbox rows that nobody reads. A consumer that reads an
 * event type (webhooks) answers for it; with no such consumer, nothing is wanted. An
 * answer may be a moment stale: a subscriber gets the events that happen after it
 * subscribed.
 */
export interface EventDemand {
  wants(accountId: string, type: EventType): boolean | Promise<boolean>
}

/** Every event is wanted; for producers whose volume is bounded anyway, and for tests. */
export const EVERY_EVENT: EventDemand = { wants: () => true }

/** The demand of several consumers: an event is wanted if any of them wants it. */
export class CombinedDemand implements EventDemand {
  private readonly parts: EventDemand[] = []

  add(demand: EventDemand): void {
    this.parts.push(demand)
  }

  async wants(accountId: string, type: EventType): Promise<boolean> {
    for (const part of this.parts) if (await part.wants(accountId, type)) return true
    return false
  }
}
