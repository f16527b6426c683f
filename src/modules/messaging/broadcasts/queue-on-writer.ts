import { sql, type Kysely, type OperationNode, type RawBuilder } from 'kysely'
import { sqliteDialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import type { WriterTaskModule } from '../../../platform/db/sqlite-writer-task.js'
import { LostClaim, queueChunk, type ChunkOutcome, type ChunkPlan, type WalkPosition } from './queue-chunk.js'

/**
 * A chunk of a broadcast's walk queued whole on SQLite's writer thread (a writer task,
 * sqlite-writer-task.ts): its reads, its INSERT … SELECT and its counters, with no round
 * trip to the thread that serves requests. Run from there, each statement's answer
 * waited for a turn of that busy thread, with the write lock held between a chunk's
 * statements and the writer idle between its chunks.
 */
export const QUEUE_ON_WRITER = new URL(`./queue-on-writer.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href

/** A chunk plan as data: its SQL fragments as Kysely's operation nodes, plain objects that a structured clone keeps. */
export type ChunkPlanData = Omit<ChunkPlan, 'audience' | 'pricing' | 'personalised'> & {
  audience: OperationNode
  pricing: { expression: OperationNode; flat: number | undefined }
  personalised: { linkCode: OperationNode | undefined; content: OperationNode } | undefined
}

export interface ChunkTaskInput {
  plan: ChunkPlanData
  nodeId: string
  now: Date
  after: WalkPosition
  size: number
}

/** The chunk's outcome; `lost`: the claim is no longer this node's, and nothing was written. */
export type ChunkTaskOutput = ChunkOutcome | { lost: true }

export function planAsData(plan: ChunkPlan): ChunkPlanData {
  const { personalised } = plan
  return {
    ...plan,
    audience: plan.audience.toOperationNode(),
    pricing: { expression: plan.pricing.expression.toOperationNode(), flat: plan.pricing.flat },
    personalised: personalised && { linkCode: personalised.linkCode?.toOperationNode(), content: personalised.content.toOperationNode() },
  }
}

function planFromData(data: ChunkPlanData): ChunkPlan {
  const { personalised } = data
  return {
    ...data,
    audience: fromNode(data.audience),
    pricing: { expression: fromNode(data.pricing.expression), flat: data.pricing.flat },
    personalised: personalised && { linkCode: personalised.linkCode && fromNode(personalised.linkCode), content: fromNode(personalised.content) },
  }
}

/** A fragment again, from its node: the sql tag takes anything with toOperationNode as it is. */
function fromNode<T>(node: OperationNode): RawBuilder<T> {
  return sql<T>`${{ toOperationNode: () => node }}`
}

export async function runWriterTask(db: Kysely<DB>, { plan, nodeId, now, after, size }: ChunkTaskInput): Promise<ChunkTaskOutput> {
  try {
    return await queueChunk(db, { dialect: sqliteDialect, nodeId, now }, planFromData(plan), after, size)
  } catch (err) {
    if (err instanceof LostClaim) return { lost: true }
    throw err
  }
}

runWriterTask satisfies WriterTaskModule<ChunkTaskInput, ChunkTaskOutput>['runWriterTask']
