import type { Kysely } from 'kysely'
import { sqliteDialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import type { WriterTaskModule } from '../../../platform/db/sqlite-writer-task.js'
import { AnsweredDemand, type DemandAnswers } from '../../../platform/outbox/demand.js'
import type { EventType } from '../../../platform/outbox/events.js'
import { recordReceiptBatch, type ReceiptBatchOutcome, type ReceiptToRecord } from './receipt-batch.js'

/**
 * A batch of receipts recorded whole on SQLite's writer thread (a writer task,
 * sqlite-writer-task.ts): the read that decides it, the decision and the writes, with no
 * round trip to the thread that serves requests while the write lock is held.
 */
export const RECEIPTS_ON_WRITER = new URL(`./receipts-on-writer.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href

/** The event types a batch of receipts asks demand for (receipt-batch.ts). */
export const RECEIPT_EVENT_TYPES: readonly EventType[] = ['DeliveryReceipt', 'SmsDelivered', 'SmsFailed']

export interface ReceiptTaskInput {
  receipts: ReceiptToRecord[]
  now: Date
  /** The event demand of the accounts seen lately (answersOf). */
  answers: DemandAnswers
}

/**
 * The batch's outcome and the accounts it asked demand for; or, when `answers` did not
 * cover some of them, only those (`unanswered`): nothing was written, and the batch is
 * run again with their answers.
 */
export type ReceiptTaskOutput = (ReceiptBatchOutcome & { asked: string[] }) | { unanswered: string[] }

class Unanswered extends Error {}

export async function runWriterTask(db: Kysely<DB>, { receipts, now, answers }: ReceiptTaskInput): Promise<ReceiptTaskOutput> {
  const demand = new AnsweredDemand(answers)
  try {
    const outcome = await db.transaction().execute(async (trx) => {
      const outcome = await recordReceiptBatch(trx, sqliteDialect, demand, now, receipts)
      if (demand.unanswered.size > 0) throw new Unanswered()
      return outcome
    })
    return { ...outcome, asked: [...demand.asked] }
  } catch (err) {
    if (err instanceof Unanswered) return { unanswered: [...demand.unanswered] }
    throw err
  }
}

runWriterTask satisfies WriterTaskModule<ReceiptTaskInput, ReceiptTaskOutput>['runWriterTask']
