import type { Generated } from 'kysely'

/**
 * Row types of every table, as the driver returns them. Timestamps are ISO 8601 UTC
 * text with milliseconds on both stores, so they read back alike and sort correctly;
 * booleans are 0/1 integers for the same reason.
 */
export interface AccountsTable {
  id: string
  name: string
  balance: number
  low_balance_threshold: number
  created_at: string
  updated_at: string
}

export interface UsersTable {
  id: string
  account_id: string
  email: string
  password_hash: string
  created_at: string
}

export interface AccountInboundNumbersTable {
  phone_number: string
  account_id: string
}

export interface ApiKeysTable {
  id: string
  account_id: string
  name: string | null
  prefix: string
  key_hash: string
  permission: 'Sms' | 'Full' | 'Playground'
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export interface OutboxTable {
  id: Generated<number>
  /** PostgreSQL: the writing transaction's xid8 (as text when read); SQLite: always 0. */
  tx_id: Generated<string | number>
  event_id: string
  account_id: string
  type: string
  payload: string
  occurred_at: string
}

export interface OutboxCursorsTable {
  consumer: string
  tx_id: string
  last_id: number
}

export interface ContactsTable {
  id: string
  account_id: string
  phone_number: string
  first_name: string | null
  last_name: string | null
  email: string | null
  country: string | null
  opted_out: number
  /** JSON object of string or number values (text on SQLite, jsonb on PostgreSQL). */
  attributes: string | Record<string, string | number>
  created_at: string
  updated_at: string
}

export interface ContactListsTable {
  id: string
  account_id: string
  name: string
  description: string | null
  created_at: string
  updated_at: string
}

export interface ContactListMembersTable {
  list_id: string
  contact_id: string
  added_at: string
}

export interface SegmentsTable {
  id: string
  account_id: string
  name: string
  description: string | null
  rules_operator: 'AND' | 'OR'
  rules: string
  contact_count: number | null
  count_version: Generated<number>
  counted_version: Generated<number>
  counted_at: string | null
  count_stale_since: string | null
  count_touched_at: string | null
  created_at: string
  updated_at: string
}

export interface ContactImportsTable {
  id: string
  account_id: string
  contact_list_id: string | null
  status: 'processing' | 'completed' | 'failed'
  rows_processed: Generated<number>
  created_count: Generated<number>
  existing_count: Generated<number>
  invalid_count: Generated<number>
  errors: Generated<string>
  failure: string | null
  created_at: string
  updated_at: string
  completed_at: string | null
  lease_owner: string | null
  lease_expires_at: string | null
}

export interface MessagesTable {
  id: string
  account_id: string
  kind: 'api' | 'broadcast' | 'reply'
  broadcast_id: string | null
  content: string
  sender_id: string
  encoding: 'GSM-7' | 'UCS-2'
  segments: number
  sandbox: number
  recipients: number
  credits_used: number
  sent_count: Generated<number>
  delivered_count: Generated<number>
  failed_count: Generated<number>
  /** Recipients settled as sent without a receipt. */
  receipt_timeout_count: Generated<number>
  scheduled_at: string | null
  created_at: string
}

export type RecipientStatus = 'queued' | 'sent' | 'delivered' | 'failed'

export interface MessageRecipientsTable {
  id: Generated<number>
  message_id: string
  account_id: string
  phone_number: string
  status: RecipientStatus
  due_at: string
  parts_delivered: Generated<number>
  carrier_message_id: string | null
  sent_at: string | null
  delivered_at: string | null
  failed_at: string | null
  error: string | null
  lease_owner: string | null
  lease_expires_at: string | null
  /** Set when no receipt came within RECEIPT_TIMEOUT_HOURS: the recipient stays sent, settled. */
  receipt_timed_out_at: Generated<string | null>
  /** The dispatch queue it waits in: 0 single sends and replies (first), 1 broadcast recipients (shared among broadcasts). */
  lane: Generated<number>
  /** The connection that took its message, by name, once sent. */
  carrier: string | null
  /** Credits per segment it was charged (its route's price when paid for). */
  price: Generated<number>
  /** A personalised broadcast's text for this recipient, rendered when queued; null: the message's. */
  content: string | null
  /** The parts of `content`; null: the message's. */
  segments: number | null
  /** Its tracked links' code (GET /l/{code}{index}); null without tracked links. */
  link_code: string | null
  /** When it first followed a tracked link. */
  clicked_at: string | null
  /** Its IANA time zone for the broadcast's send window; null: the window's own. */
  time_zone: string | null
}

/** What recipients did per account, 15-minute bucket, broadcast and carrier (GET /v1/stats/messages). */
export interface MessageStatsTable {
  account_id: string
  /** The bucket's UTC start, ISO text. */
  bucket: string
  /** '' for single sends. */
  broadcast_id: string
  /** The connection's name; '' for what happens before one takes the recipient (queued, credits, failures before a hand-off). */
  carrier: string
  queued: Generated<number>
  sent: Generated<number>
  delivered: Generated<number>
  failed: Generated<number>
  /** Debited minus refunded. */
  credits: Generated<number>
}

/** Failures per account, UTC day and error text (GET /v1/stats/errors). */
export interface MessageErrorStatsTable {
  account_id: string
  /** The day's UTC start, ISO text. */
  bucket: string
  /** Cut to 200 characters. */
  error: string
  count: number
  /** The number of the newest failure counted here. */
  example_recipient: string
  last_at: string
}

export interface CarrierPartsTable {
  carrier: string
  /** The link that handed the part over (smpp system_id@host:port, or the simulator's name); '*' before it was kept. */
  connection: string
  carrier_message_id: string
  recipient_id: number
  sequence: number
  status: 'sent' | 'delivered' | 'failed'
}

export interface SimulatorMessagesTable {
  part_id: string
  /** Whose books: the sandbox, the simulator, or `simulator:<name>` for an operator's simulator connection. */
  carrier: string
  carrier_message_id: string
  to_number: string
  outcome: 'delivered' | 'failed'
  report_at: string
  reported: Generated<number>
  submissions: Generated<number>
  accepted_at: string
}

export interface IdempotencyKeysTable {
  account_id: string
  key: string
  request_hash: string
  response_status: number | null
  response_body: string | null
  created_at: string
  expires_at: string
}

export type BroadcastStatus = 'draft' | 'scheduled' | 'sending' | 'paused' | 'completed' | 'cancelled'

export interface BroadcastsTable {
  id: string
  account_id: string
  name: string
  message: string
  sender_id: string
  contact_list_id: string | null
  segment_id: string | null
  status: BroadcastStatus
  message_id: string | null
  sandbox: Generated<number>
  scheduled_at: string | null
  created_at: string
  updated_at: string
  sent_at: string | null
  completed_at: string | null
  /** Why the last scheduled start failed and the broadcast went back to draft; null otherwise. */
  failure: string | null
  queue_total: Generated<number>
  queued: Generated<number>
  queue_after_created_at: string | null
  queue_after_id: string | null
  /** The account's price list when the broadcast was paid for (JSON [prefix, price][]); null before routes. */
  queue_prices: string | null
  /** What was paid for: the sum of the recipients' prices per segment; null before routes (then queue_total). */
  queue_price_total: number | string | null
  /** The sum of the prices of the recipients queued so far. */
  queued_price_total: Generated<number | string>
  lease_owner: string | null
  lease_expires_at: string | null
  /** Every http(s) URL becomes a tracked short link per recipient. */
  track_links: Generated<number>
  /** Caps how many recipients are handed over per minute; null: as fast as the carriers take them. */
  max_per_minute: number | null
  /** JSON {start: "HH:MM", end: "HH:MM", timeZone}; null: any time. */
  send_window: string | null
  paused_at: string | null
  cancelled_at: string | null
  clicks: Generated<number>
  unique_clicks: Generated<number>
  /** The tracked URLs of the message as written (JSON array), kept when the send starts. */
  links: string | null
  /** Recipients carry texts of their own; then queue_price_total and queued_price_total sum price x segments. */
  personalised: Generated<number>
  /** When a paced broadcast may next hand a recipient over. */
  pace_next_at: string | null
}

export interface WebhooksTable {
  id: string
  account_id: string
  endpoint: string
  event_type: string
  is_active: number
  /** Events that occurred before this are not delivered: creation or the latest re-activation. */
  active_since: string
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: string | null
  created_at: string
  updated_at: string
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface WebhookDeliveriesTable {
  id: string
  webhook_id: string
  account_id: string
  event_id: string
  event_type: string
  payload: string
  status: WebhookDeliveryStatus
  attempts: Generated<number>
  scheduled_attempts: Generated<number>
  next_attempt_at: string | null
  last_attempt_at: string | null
  created_at: string
  lease_owner: string | null
  lease_expires_at: string | null
}

/** An event's first attempts to a group of its webhooks, not yet all recorded. */
export interface WebhookJobsTable {
  id: string
  account_id: string
  event_id: string
  event_type: string
  payload: string
  /** Comma-separated webhook ids. */
  webhook_ids: string
  deliveries: number
  created_at: string
  claims: Generated<number>
  lease_owner: string | null
  lease_expires_at: string | null
}

export interface WebhookLogsTable {
  id: string
  delivery_id: string
  webhook_id: string
  account_id: string
  event_id: string
  event_type: string
  attempt: number
  status_code: number
  success: number
  duration_ms: number
  error: string | null
  response_body: string | null
  delivered_at: string
  /** When the delivery's next automatic attempt was due after this one; null when none was (it succeeded, or the delivery ended). */
  next_attempt_at: string | null
  /** PostgreSQL: the writing transaction's xid8 (as text when read), 0 for rows older than the column; SQLite: always 0. */
  tx_id: Generated<string | number>
}

/** Webhook delivery attempts per account and 15-minute bucket, by outcome (GET /v1/stats/webhooks). */
export interface WebhookStatsTable {
  account_id: string
  /** The bucket's UTC start, ISO text. */
  bucket: string
  /** 2xx answers. */
  delivered: number
  /** Failed attempts after which no automatic attempt was due. */
  failed: number
  /** Failed attempts after which the delivery waited for its next automatic attempt. */
  retried: number
}

/** How far the webhook stats roll-up has read the attempt log (one row), and the node that rolls up. */
export interface WebhookStatsCursorTable {
  id: string
  tx_id: string
  last_id: string
  lease_owner: string | null
  lease_expires_at: string | null
}

export interface PushEventsTable {
  /** The SSE id, from one sequence for all channels. */
  id: Generated<number>
  account_id: string
  channel: string
  event: string
  /** The published JSON object, as text. */
  data: string
  published_at: string
}

export interface PushHistoryTrimsTable {
  account_id: string
  channel: string
  /** The newest id trimmed from the channel's history. */
  trimmed_through: number
}

export type CarrierType = 'simulator' | 'smpp' | 'twilio'

export interface CarrierConnectionsTable {
  id: string
  name: string
  type: CarrierType
  is_enabled: number
  /** The type's settings as JSON, secrets included. */
  config: string
  created_at: string
  updated_at: string
}

export interface CarrierRoutesTable {
  /** The route's place in the table as it was given. */
  position: number
  /** "+" or "+" and digits. */
  prefix: string
  /** Connection names, in the order they are tried, as JSON. */
  carriers: string
  /** Credits per segment per recipient. */
  price: number
  /** Null for a route every account uses. */
  account_id: string | null
}

export interface CarrierBindsTable {
  connection_id: string
  slot: number
  lease_owner: string | null
  lease_expires_at: string | null
  /** The holder's link: up, connecting or down. */
  status: 'up' | 'connecting' | 'down' | null
}

export interface CarrierConfigVersionTable {
  id: number
  version: number | string
}

export interface DB {
  carrier_connections: CarrierConnectionsTable
  carrier_routes: CarrierRoutesTable
  carrier_config_version: CarrierConfigVersionTable
  carrier_binds: CarrierBindsTable
  messages: MessagesTable
  message_recipients: MessageRecipientsTable
  message_stats: MessageStatsTable
  message_error_stats: MessageErrorStatsTable
  carrier_parts: CarrierPartsTable
  simulator_messages: SimulatorMessagesTable
  idempotency_keys: IdempotencyKeysTable
  broadcasts: BroadcastsTable
  contacts: ContactsTable
  contact_lists: ContactListsTable
  contact_list_members: ContactListMembersTable
  segments: SegmentsTable
  contact_imports: ContactImportsTable
  accounts: AccountsTable
  users: UsersTable
  account_inbound_numbers: AccountInboundNumbersTable
  api_keys: ApiKeysTable
  outbox: OutboxTable
  outbox_cursors: OutboxCursorsTable
  webhooks: WebhooksTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_jobs: WebhookJobsTable
  webhook_logs: WebhookLogsTable
  webhook_stats: WebhookStatsTable
  webhook_stats_cursor: WebhookStatsCursorTable
  push_events: PushEventsTable
  push_history_trims: PushHistoryTrimsTable
}
