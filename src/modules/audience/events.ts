import type { DomainEvent } from '../../platform/outbox/events.js'

/** ContactCreated / ContactDeleted payload: `{contactId, phoneNumber, at}`. */
export function contactEvent(
  type: 'ContactCreated' | 'ContactDeleted',
  accountId: string,
  contact: { id: string; phoneNumber: string },
  at: Date,
): DomainEvent {
  return { type, accountId, occurredAt: at, data: { contactId: contact.id, phoneNumber: contact.phoneNumber, at: at.toISOString() } }
}

/** ContactUpdated adds `changes`: the names of the fields that changed. */
export function contactUpdatedEvent(accountId: string, contact: { id: string; phoneNumber: string }, changes: string[], at: Date): DomainEvent {
  return {
    type: 'ContactUpdated',
    accountId,
    occurredAt: at,
    data: { contactId: contact.id, phoneNumber: contact.phoneNumber, at: at.toISOString(), changes },
  }
}
