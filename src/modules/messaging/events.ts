import type { DomainEvent } from '../../platform/outbox/events.js'

/** Per-recipient SMS events (api.md, SMS): flat payloads, the relay adds `event` first. */
export interface RecipientRef {
  messageId: string
  accountId: string
  phoneNumber: string
}

/** `carrier`: the connection that took it, by name. */
export function smsSent(r: RecipientRef, at: Date, carrier: string): DomainEvent {
  return { type: 'SmsSent', accountId: r.accountId, occurredAt: at, data: { messageId: r.messageId, recipientPhone: r.phoneNumber, sentAt: at.toISOString(), carrier } }
}

export function smsDelivered(r: RecipientRef, at: Date): DomainEvent {
  return { type: 'SmsDelivered', accountId: r.accountId, occurredAt: at, data: { messageId: r.messageId, recipientPhone: r.phoneNumber, deliveredAt: at.toISOString() } }
}

export function smsFailed(r: RecipientRef, at: Date, error: string): DomainEvent {
  return { type: 'SmsFailed', accountId: r.accountId, occurredAt: at, data: { messageId: r.messageId, recipientPhone: r.phoneNumber, failedAt: at.toISOString(), error } }
}

export function deliveryReceipt(r: RecipientRef, receipt: { status: 'delivered' | 'failed'; carrierMessageId: string; receivedAt: Date; error: string | null }): DomainEvent {
  return {
    type: 'DeliveryReceipt',
    accountId: r.accountId,
    occurredAt: receipt.receivedAt,
    data: {
      messageId: r.messageId,
      recipientPhone: r.phoneNumber,
      status: receipt.status,
      carrierMessageId: receipt.carrierMessageId,
      receivedAt: receipt.receivedAt.toISOString(),
      error: receipt.error,
    },
  }
}

export function inboundMessage(accountId: string, message: { from: string; to: string; content: string; receivedAt: Date }): DomainEvent {
  return {
    type: 'InboundMessage',
    accountId,
    occurredAt: message.receivedAt,
    data: { from: message.from, to: message.to, content: message.content, receivedAt: message.receivedAt.toISOString() },
  }
}

export function optOut(accountId: string, phoneNumber: string, keyword: string, at: Date): DomainEvent {
  return { type: 'OptOut', accountId, occurredAt: at, data: { phoneNumber, keyword, at: at.toISOString() } }
}

/**
 * LinkClicked (api.md, Campaign features): a recipient followed one of its broadcast's
 * tracked links; every click, not only the first.
 */
export function linkClicked(click: { accountId: string; broadcastId: string; phoneNumber: string; url: string }, at: Date): DomainEvent {
  return {
    type: 'LinkClicked',
    accountId: click.accountId,
    occurredAt: at,
    data: { broadcastId: click.broadcastId, recipientPhone: click.phoneNumber, url: click.url, at: at.toISOString() },
  }
}
