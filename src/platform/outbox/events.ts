/**
 * The domain events the platform records, each one a webhook may subscribe to: the 13 of
 * the spec, then LinkClicked, an addition (api.md, Campaign features).
 */
export const EVENT_TYPES = [
  'SmsSent',
  'SmsDelivered',
  'SmsFailed',
  'InboundMessage',
  'DeliveryReceipt',
  'ContactCreated',
  'ContactUpdated',
  'ContactDeleted',
  'CampaignCreated',
  'CampaignUpdated',
  'CampaignDeleted',
  'OptOut',
  'LowBalance',
  'LinkClicked',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

export interface DomainEvent {
  type: EventType
  accountId: string
  occurredAt: Date
  /** Flat JSON payload; `event` is added first when it is delivered. */
  data: Record<string, unknown>
}

/** An event as the relay hands it to consumers. */
export interface RelayedEvent {
  /**
   * Position in the outbox. Relay order is commit order on SQLite; on PostgreSQL it is
   * the order of the writing transactions, and never passes one that may still commit.
   */
  sequence: number
  /** Stable UUID of the event, e.g. the `webhook-id` of every delivery attempt. */
  eventId: string
  type: EventType
  accountId: string
  occurredAt: string
  data: Record<string, unknown>
}
