// The messages the dispatcher hands over, as it needs them (parts split once), cached by id.
import type { Kysely } from 'kysely'
import type { DB, MessagesTable } from '../../../platform/db/schema.js'
import { splitSms } from '../encoding.js'
import type { ClaimedRecipient, MessageInfo } from './handoffs.js'

const MESSAGES_CACHED = 1000

/** The columns of a message the dispatcher hands over with. */
const MESSAGE_COLUMNS = ['id', 'account_id', 'kind', 'broadcast_id', 'content', 'sender_id', 'sandbox', 'segments', 'created_at'] as const
export type MessageRow = Pick<MessagesTable, (typeof MESSAGE_COLUMNS)[number]>

export class MessageInfoCache {
  private readonly messages = new Map<string, MessageInfo>()

  constructor(private readonly db: Kysely<DB>) {}

  async messagesOf(claimed: ClaimedRecipient[]): Promise<Map<string, MessageInfo>> {
    const missing = [...new Set(claimed.map((r) => r.messageId))].filter((id) => !this.messages.has(id))
    if (missing.length > 0) {
      const rows = await this.db
        .selectFrom('messages')
        .select(MESSAGE_COLUMNS)
        .where('id', 'in', missing)
        .execute()
      for (const row of rows) this.remember(row)
    }
    return new Map(claimed.map((r) => [r.messageId, this.messages.get(r.messageId)!]))
  }

  /**
   * Keeps a message this node has just queued, as the store holds it: its first hand-off
   * here needs no read (a single send's own statement, otherwise).
   */
  remember(row: MessageRow): void {
    if (this.messages.has(row.id)) return
    const { encoding, parts } = splitSms(row.content)
    if (this.messages.size >= MESSAGES_CACHED) this.messages.delete(this.messages.keys().next().value!)
    this.messages.set(row.id, {
      id: row.id,
      accountId: row.account_id,
      kind: row.kind,
      broadcastId: row.broadcast_id,
      senderId: row.sender_id,
      sandbox: Boolean(row.sandbox),
      segments: Number(row.segments),
      encoding,
      parts,
      createdAt: new Date(row.created_at),
    })
  }
}
