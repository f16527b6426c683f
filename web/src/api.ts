/**
 * The public API as the dashboard calls it: the typed client of clients/typescript, whose
 * types come from the server's OpenAPI document (`npm run generate:client`).
 */
import { createClient, ProblemError, type FieldError, type MessagingClient, type ResponseBody } from '../../clients/typescript'

export { EVENT_TYPES, unwrap } from '../../clients/typescript'
export type {
  Account,
  ApiKey,
  Broadcast,
  Contact,
  ContactImport,
  CreateBroadcastRequest,
  ContactList,
  CreateContactsResult,
  DeliveryLogEntry,
  EventType,
  Page,
  Permission,
  PublishResult,
  PushToken,
  RecipientStatus,
  RequestBody,
  RulesOperator,
  Segment,
  SegmentListItem,
  SegmentPreview,
  SendBroadcastResult,
  SendSmsResult,
  SmsListItem,
  SmsRecipient,
  Webhook,
} from '../../clients/typescript'

// Campaign answers the client names no type for yet.
/** POST /v1/broadcasts/preview: the message as one contact receives it. */
export type BroadcastPreview = ResponseBody<'previewBroadcastMessage', 200>
/** GET /v1/broadcasts/{id}/estimate: recipients and credits of a send now. */
export type BroadcastEstimate = ResponseBody<'estimateBroadcast', 200>
/** POST /v1/broadcasts/{id}/test: answered as POST /v1/sms/send is. */
export type BroadcastTestResult = ResponseBody<'testSendBroadcast', 201>

// Insights: the stats endpoints' answers.
/** GET /v1/stats/messages: counts per hour or day (queued, sent, delivered, failed, credits). */
export type MessageStats = ResponseBody<'getMessageStats', 200>
/** GET /v1/stats/errors: the errors recipients failed with, most frequent first. */
export type ErrorStats = ResponseBody<'getErrorStats', 200>
/** GET /v1/stats/webhooks: delivery attempts per interval by outcome, and the backlog now. */
export type WebhookStats = ResponseBody<'getWebhookStats', 200>

/** The API's RFC 9457 problem details as an error: what the server answered, or a network failure (status 0). */
export { ProblemError as ApiError }

export type ApiClient = MessagingClient

/**
 * A client of /v1 on this origin, with the session's token when there is one. A call
 * that cannot reach the server throws ApiError too; an aborted one stays an AbortError,
 * so the page that aborted it can tell.
 */
export function createApiClient(token?: string): ApiClient {
  const client = createClient('', token, {
    headers: { accept: 'application/json, application/problem+json' },
    // The token travels in the header only; no cookie is needed or sent.
    credentials: 'omit',
  })
  client.use({
    onError({ error }) {
      if (error instanceof DOMException && error.name === 'AbortError') return
      return new ProblemError({
        type: 'about:blank',
        title: 'Network error',
        status: 0,
        detail: 'The server could not be reached. Check your connection and try again.',
      })
    },
  })
  return client
}

/** Errors the API names for `field` itself or for its members (`recipients[2]`, `rules[0].value`). */
export function errorsFor(error: unknown, field: string): FieldError[] {
  if (!(error instanceof ProblemError)) return []
  return (error.problem.errors ?? []).filter((e) => e.field === field || e.field.startsWith(`${field}[`) || e.field.startsWith(`${field}.`))
}

// The document describes segment rules in prose only (`rules` is a JSON array serialised
// as a string), so the rule builder's choices are written here, from api.md's
// "Segment rule fields".

/** Contact properties a segment rule may test, besides `attributes.<name>`. */
export const RULE_FIELDS = ['phoneNumber', 'firstName', 'lastName', 'email', 'country', 'createdAt', 'contactListId'] as const

export const RULE_OPERATORS = ['equals', 'notEquals', 'contains', 'startsWith', 'greaterThan', 'lessThan'] as const
export type RuleOperator = (typeof RULE_OPERATORS)[number]

export interface SegmentRule {
  field: string
  operator: RuleOperator
  value: string
}
