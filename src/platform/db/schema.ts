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

export interface DB {
  accounts: AccountsTable
  users: UsersTable
  account_inbound_numbers: AccountInboundNumbersTable
  api_keys: ApiKeysTable
  outbox: OutboxTable
  outbox_cursors: OutboxCursorsTable
}
