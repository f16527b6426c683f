import { threadId } from 'node:worker_threads'
import { sql, type Kysely } from 'kysely'

/**
 * A writer task for test/platform/sqlite-writer.test.ts: inserts `names` into `items` in
 * one transaction, reads the count there, and fails as told (after its writes, so that a
 * failure must roll them back).
 */
export async function runWriterTask(db: Kysely<any>, input: { names: string[]; fail?: 'throw' | 'duplicate' }): Promise<{ count: number; threadId: number }> {
  return db.transaction().execute(async (trx) => {
    for (const name of input.names) await trx.insertInto('items').values({ name }).execute()
    const row = await trx.selectFrom('items').select(sql<number>`count(*)`.as('count')).executeTakeFirstOrThrow()
    if (input.fail === 'duplicate') await trx.insertInto('items').values({ name: input.names[0] }).execute()
    if (input.fail === 'throw') throw new Error('the task changed its mind')
    return { count: Number(row.count), threadId }
  })
}
