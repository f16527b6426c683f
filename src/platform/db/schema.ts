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

export interface DB {
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
}
