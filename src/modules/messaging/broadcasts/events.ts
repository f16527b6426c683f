import type { DomainEvent } from '../../../platform/outbox/events.js'

/** CampaignCreated / CampaignUpdated / CampaignDeleted payload: `{broadcastId, name, status, at}`. */
export function campaignEvent(
  type: 'CampaignCreated' | 'CampaignUpdated' | 'CampaignDeleted',
  accountId: string,
  broadcast: { id: string; name: string; status: string },
  at: Date,
): DomainEvent {
  return { type, accountId, occurredAt: at, data: { broadcastId: broadcast.id, name: broadcast.name, status: broadcast.status, at: at.toISOString() } }
}
