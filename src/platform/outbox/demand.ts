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

/** Answers of a demand for some accounts and event types, as data another thread can be given. */
export type DemandAnswers = Record<string, EventType[]>

/** The event types of `types` that `demand` wants for each of `accounts`. */
export async function answersOf(demand: EventDemand, accounts: Iterable<string>, types: readonly EventType[]): Promise<DemandAnswers> {
  const answers: DemandAnswers = Object.create(null) as DemandAnswers
  for (const accountId of accounts) {
    const wanted: EventType[] = []
    for (const type of types) if (await demand.wants(accountId, type)) wanted.push(type)
    answers[accountId] = wanted
  }
  return answers
}

/**
 * A demand answered from answers taken on another thread (answersOf). An account they do
 * not cover wants every event, as one a WebhookDemand has no answer for yet does: an event
 * is never left out for want of an answer. Such accounts are kept in `unanswered`, so the
 * next answers can cover them.
 */
export class AnsweredDemand implements EventDemand {
  /** The accounts asked about. */
  readonly asked = new Set<string>()
  readonly unanswered = new Set<string>()

  constructor(private readonly answers: DemandAnswers) {}

  wants(accountId: string, type: EventType): boolean {
    this.asked.add(accountId)
    if (Object.hasOwn(this.answers, accountId)) return this.answers[accountId]!.includes(type)
    this.unanswered.add(accountId)
    return true
  }
}
