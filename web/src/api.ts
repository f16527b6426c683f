/** The public API's RFC 9457 problem details, as every endpoint answers errors. */
export interface FieldError {
  field: string
  message: string
}

export interface Problem {
  type?: string
  title: string
  status: number
  detail?: string
  errors?: FieldError[]
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.title)
  }

  get status(): number {
    return this.problem.status
  }
}

/** The spec's paginated list envelope. */
export interface Page<T> {
  items: T[]
  totalCount: number
  pageNumber: number
  totalPages: number
  hasNextPage: boolean
  hasPreviousPage: boolean
}

export interface RequestOptions {
  token?: string | undefined
  body?: unknown
  /** A file sent as it is, with its own content type (the CSV import), instead of a JSON body. */
  upload?: { content: Blob; contentType: string }
  signal?: AbortSignal
}

/**
 * Calls /v1 on this origin and answers the parsed body, or throws ApiError with the
 * problem details (a network failure or a non-problem answer becomes one too).
 */
export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json' }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.upload) headers['content-type'] = options.upload.contentType
  else if (options.body !== undefined) headers['content-type'] = 'application/json'
  let response: Response
  try {
    response = await fetch(`/v1${path}`, {
      method,
      headers,
      body: options.upload ? options.upload.content : options.body === undefined ? null : JSON.stringify(options.body),
      signal: options.signal ?? null,
      // The token travels in the header only; no cookie is needed or sent.
      credentials: 'omit',
    })
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err
    throw new ApiError({ title: 'Network error', status: 0, detail: 'The server could not be reached. Check your connection and try again.' })
  }
  const text = await response.text()
  const type = response.headers.get('content-type') ?? ''
  const parsed: unknown = type.includes('json') && text !== '' ? JSON.parse(text) : undefined
  if (response.ok) return parsed as T
  if (isProblem(parsed)) throw new ApiError(parsed)
  throw new ApiError({ title: response.statusText || 'Request failed', status: response.status, detail: `The server answered ${response.status}.` })
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as Problem).title === 'string' && typeof (value as Problem).status === 'number'
}

/** Errors the API names for `field` itself or for its members (`recipients[2]`, `rules[0].value`). */
export function errorsFor(error: unknown, field: string): FieldError[] {
  if (!(error instanceof ApiError)) return []
  return (error.problem.errors ?? []).filter((e) => e.field === field || e.field.startsWith(`${field}[`) || e.field.startsWith(`${field}.`))
}

// Resources this dashboard reads, as the API documents them (/docs).
export interface Account {
  id: string
  name: string
  balance: number
  lowBalanceThreshold: number
  inboundNumbers: string[]
  createdAt: string
}

export type Permission = 'Sms' | 'Full' | 'Playground'

export interface ApiKey {
  id: string
  name: string | null
  prefix: string
  permission: Permission
  createdAt: string
  lastUsedAt: string | null
}

export type RecipientStatus = 'queued' | 'sent' | 'delivered' | 'failed'

export interface SmsListItem {
  messageId: string
  content: string
  senderId: string
  segments: number
  encoding: 'GSM-7' | 'UCS-2'
  sandbox: boolean
  broadcastId: string | null
  recipientCount: number
  creditsUsed: number
  sent: number
  delivered: number
  failed: number
  receiptTimedOut: number
  scheduledAt: string | null
  createdAt: string
}

export interface SmsRecipient {
  phoneNumber: string
  status: RecipientStatus
  carrierMessageId: string | null
  sentAt: string | null
  deliveredAt: string | null
  failedAt: string | null
  error: string | null
  receiptTimedOutAt: string | null
}

export interface SmsMessage extends SmsListItem {
  recipients: SmsRecipient[]
}

export interface SendSmsResult {
  messageId: string
  status: 'queued'
  recipients: number
  segments: number
  encoding: 'GSM-7' | 'UCS-2'
  creditsUsed: number
  sandbox: boolean
  skipped: { phoneNumber: string; reason: 'optedOut' }[]
}

export interface Contact {
  id: string
  phoneNumber: string
  firstName: string | null
  lastName: string | null
  email: string | null
  country: string | null
  optedOut: boolean
  attributes: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

export interface CreateContactsResult {
  created: number
  existing: number
  duplicates: number
  invalid: { value: string; reason: string }[]
  contactIds: string[]
}

export interface ContactList {
  id: string
  name: string
  description: string
  contactCount: number
  createdAt: string
}

/** The 13 event types a webhook can subscribe to (src/platform/outbox/events.ts). */
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
] as const

export type EventType = (typeof EVENT_TYPES)[number]

export interface Webhook {
  id: string
  endpoint: string
  eventType: EventType
  isActive: boolean
  createdAt: string
}

export interface DeliveryLogEntry {
  id: string
  webhookId: string
  eventType: EventType
  statusCode: number
  attempt: number
  deliveredAt: string
  success: boolean
  durationMs: number
  error: string | null
  responseBody: string | null
  eventId: string
}

export interface PushToken {
  token: string
  expiresAt: string
  channels: string[]
}

export interface PublishResult {
  messageId: string
  delivered: number
  creditsUsed: number
}

export type RulesOperator = 'AND' | 'OR'

/** Contact properties a segment rule may test, besides `attributes.<name>` (api.md, "Segment rule fields"). */
export const RULE_FIELDS = ['phoneNumber', 'firstName', 'lastName', 'email', 'country', 'createdAt', 'contactListId'] as const

export const RULE_OPERATORS = ['equals', 'notEquals', 'contains', 'startsWith', 'greaterThan', 'lessThan'] as const
export type RuleOperator = (typeof RULE_OPERATORS)[number]

export interface SegmentRule {
  field: string
  operator: RuleOperator
  value: string
}

export interface SegmentListItem {
  id: string
  name: string
  description: string
  rulesOperator: RulesOperator
  contactCount: number
  createdAt: string
}

export interface Segment extends SegmentListItem {
  /** A JSON array of SegmentRule, serialised as a string. */
  rules: string
  updatedAt: string
}

export interface SegmentPreview {
  count: number
  optedOut: number
  sample: Contact[]
}

export type BroadcastStatus = 'draft' | 'scheduled' | 'sending' | 'completed'

export interface Broadcast {
  id: string
  name: string
  message: string
  senderId: string
  contactListId: string | null
  segmentId: string | null
  status: BroadcastStatus
  recipients: number
  creditsUsed: number
  sent: number
  delivered: number
  failed: number
  receiptTimedOut: number
  segments: number
  encoding: 'GSM-7' | 'UCS-2'
  sandbox: boolean
  scheduledAt: string | null
  createdAt: string
  sentAt: string | null
  completedAt: string | null
  failure: string | null
}

export interface SendBroadcastResult {
  status: 'sending' | 'scheduled' | 'completed'
  recipients: number
  creditsUsed: number
}

export interface ContactImport {
  id: string
  status: 'processing' | 'completed' | 'failed'
  contactListId: string | null
  rowsProcessed: number
  created: number
  existing: number
  invalid: number
  /** The first 1000 rejected rows; row 1 is the first data row. */
  errors: { row: number; value: string; reason: string }[]
  failure: string | null
  createdAt: string
  completedAt: string | null
}
