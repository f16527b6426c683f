/**
 * A typed client of the messaging platform's API: openapi-fetch over the types that
 * `npm run generate:client` writes to schema.ts from the server's OpenAPI document.
 * It runs wherever fetch does (browsers, Node.js 20.19 and later).
 */
import createFetchClient, { type Client, type ClientOptions as FetchClientOptions } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

export type { components, operations, paths }
export type { Middleware } from 'openapi-fetch'

/** A client of every operation: `client.GET('/v1/sms/{id}', { params: { path: { id } } })`. */
export type MessagingClient = Client<paths>

/** fetch options every call of a client shares (fetch, headers, credentials, ...); the base URL is an argument of its own. */
export type ClientOptions = Omit<FetchClientOptions, 'baseUrl'>

/**
 * A client of the server at `baseUrl` (its origin, e.g. https://sms.example.com; '' in a
 * page that server serves). `credential` (an API key, a session JWT or the operator
 * token) goes as `Authorization: Bearer` on every call that does not set its own.
 */
export function createClient(baseUrl: string, credential?: string, options: ClientOptions = {}): MessagingClient {
  const client = createFetchClient<paths>({ ...options, baseUrl })
  if (credential !== undefined) {
    client.use({
      onRequest({ request }) {
        if (!request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${credential}`)
      },
    })
  }
  return client
}

/** The JSON body an operation answers with `status`. */
export type ResponseBody<Id extends keyof operations, Status extends keyof operations[Id]['responses']> = operations[Id]['responses'][Status] extends {
  content: { 'application/json': infer Body }
}
  ? Body
  : never

/** The JSON body an operation takes. */
export type RequestBody<Id extends keyof operations> =
  NonNullable<operations[Id]['requestBody']> extends { content: { 'application/json': infer Body } } ? Body : never

/** RFC 9457 problem details, as every operation answers an error (application/problem+json). */
export type Problem = components['schemas']['Problem']
/** One bad field of a 422 (`recipients[2]`, `rules[0].value`, a query or path parameter). */
export type FieldError = NonNullable<Problem['errors']>[number]

/** An answer that was not a success, with its problem details. */
export class ProblemError extends Error {
  constructor(
    readonly problem: Problem,
    /** The answer itself, for its headers (Retry-After on a 429); absent when none came. */
    readonly response?: Response,
  ) {
    super(problem.detail || problem.title)
    this.name = 'ProblemError'
  }

  get status(): number {
    return this.problem.status
  }
}

/** Whether a parsed body has what every problem details body has: a title and a status. */
export function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as Problem).title === 'string' && typeof (value as Problem).status === 'number'
}

interface Answer {
  data?: unknown
  error?: unknown
  response: Response
}

/** What a successful call gives: the body, or undefined for a 204. */
export type DataOf<A> = A extends { data: infer Data } ? ([Data] extends [never] ? undefined : Data) : never

/**
 * The body of a successful answer, or a ProblemError. An error answer that is not
 * problem+json (a proxy's HTML page) becomes a problem with its status all the same.
 */
export async function unwrap<A extends Answer>(answer: A | Promise<A>): Promise<DataOf<A>> {
  const { data, error, response } = await answer
  if (response.ok) return data as DataOf<A>
  throw new ProblemError(
    isProblem(error)
      ? error
      : { type: 'about:blank', title: response.statusText || 'Request failed', status: response.status, detail: `The server answered ${response.status}.` },
    response,
  )
}

/** The list envelope of every paginated operation, around items of type T. */
export type Page<T> = Omit<ResponseBody<'listContacts', 200>, 'items'> & { items: T[] }

// Names for the main resources and bodies, taken from the operations that answer or take them.

export type Account = ResponseBody<'getAccount', 200>
export type ApiKey = ResponseBody<'listKeys', 200>['items'][number]
export type Permission = ApiKey['permission']

export type Contact = ResponseBody<'getContact', 200>
export type CreateContactsResult = ResponseBody<'createContacts', 201>
export type ContactImport = ResponseBody<'getContactImport', 200>
export type ContactList = ResponseBody<'listContactLists', 200>['items'][number]

export type Segment = ResponseBody<'getSegment', 200>
export type SegmentListItem = ResponseBody<'listSegments', 200>['items'][number]
export type SegmentPreview = ResponseBody<'previewSegment', 200>
export type RulesOperator = Segment['rulesOperator']

export type SendSmsRequest = RequestBody<'sendSms'>
export type SendSmsResult = ResponseBody<'sendSms', 201>
export type SmsMessage = ResponseBody<'getSms', 200>
export type SmsListItem = ResponseBody<'listSms', 200>['items'][number]
export type SmsRecipient = SmsMessage['recipients'][number]
export type RecipientStatus = SmsRecipient['status']

export type CreateBroadcastRequest = RequestBody<'createBroadcast'>
export type Broadcast = ResponseBody<'getBroadcast', 200>
export type BroadcastStatus = Broadcast['status']
export type SendBroadcastResult = ResponseBody<'sendBroadcast', 202>

export type Webhook = ResponseBody<'getWebhook', 200>
export type EventType = Webhook['eventType']
export type DeliveryLogEntry = ResponseBody<'listWebhookLogs', 200>[number]

export type PushToken = ResponseBody<'issuePushToken', 200>
export type PublishResult = ResponseBody<'publishPushEvent', 200>

// The document gives the event types as a type only. A record keyed by that type must
// name each exactly once, so this list stops compiling when the document gains or
// loses one (after `npm run generate:client`), instead of going stale.
const EVENT_TYPE_SET: Record<EventType, true> = {
  SmsSent: true,
  SmsDelivered: true,
  SmsFailed: true,
  InboundMessage: true,
  DeliveryReceipt: true,
  ContactCreated: true,
  ContactUpdated: true,
  ContactDeleted: true,
  CampaignCreated: true,
  CampaignUpdated: true,
  CampaignDeleted: true,
  OptOut: true,
  LowBalance: true,
  LinkClicked: true,
}

/** Every event type a webhook can subscribe to. */
export const EVENT_TYPES = Object.keys(EVENT_TYPE_SET) as readonly EventType[]
