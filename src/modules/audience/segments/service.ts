import type { Kysely, RawBuilder, Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { offsetOf, toPage, type Page, type PageRequest } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { NotFound, ValidationFailed } from '../../../platform/problems.js'
import { toContact } from '../contacts/service.js'
import type { AudienceDeps } from '../deps.js'
import * as listQueries from '../lists/queries.js'
import { parseRules, referencedListIds, type RuleSet, type RulesOperator } from './rules.js'
import type { Segment, SegmentBody, SegmentListItem, SegmentPreview } from './schemas.js'
import { compileRuleSet } from './sql.js'
import * as segmentQueries from './queries.js'

type SegmentRow = NonNullable<Awaited<ReturnType<typeof segmentQueries.findSegment>>>

// The schema's minLength sees the untrimmed text; a name of spaces alone is no name.
function segmentName(name: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw ValidationFailed.field('name', 'must not be blank')
  return trimmed
}

/** Checks the rules and that every list they name belongs to the account (else 404, as for any foreign id). */
async function checkRuleSet(deps: AudienceDeps, accountId: string, operator: RulesOperator | undefined, rules: string | undefined): Promise<RuleSet> {
  const ruleSet: RuleSet = { operator: operator ?? 'AND', rules: parseRules(rules ?? '[]') }
  const listIds = referencedListIds(ruleSet.rules)
  if ((await listQueries.countOwnedLists(deps.db, accountId, listIds)) < listIds.length) {
    for (const listId of listIds) {
      if (!(await listQueries.findList(deps.db, accountId, listId))) throw new NotFound('contact list', listId)
    }
  }
  return ruleSet
}

function ruleSetOf(row: { rules_operator: RulesOperator; rules: string }): RuleSet {
  return { operator: row.rules_operator, rules: parseRules(row.rules) }
}

/**
 * Who a broadcast to a list or a segment reaches, as one SQL predicate over `contacts`
 * (opted-out contacts are the caller's to leave out, as with compileRuleSet). Reads
 * through `db`, so a send can evaluate it inside its own transaction. A missing or
 * foreign list or segment is 404.
 */
export async function compileAudience(
  db: Kysely<DB> | Transaction<DB>,
  dialect: Dialect,
  accountId: string,
  target: { contactListId: string } | { segmentId: string },
): Promise<RawBuilder<boolean>> {
  if ('contactListId' in target) {
    if (!(await listQueries.findList(db, accountId, target.contactListId))) throw new NotFound('contact list', target.contactListId)
    return compileRuleSet(dialect, { operator: 'AND', rules: [{ field: 'contactListId', operator: 'equals', value: target.contactListId }] })
  }
  const row = await segmentQueries.findSegment(db, accountId, target.segmentId)
  if (!row) throw new NotFound('segment', target.segmentId)
  return compileRuleSet(dialect, ruleSetOf(row))
}

/** Live recipient count of saved rules: what a broadcast would send to now. */
export async function countSegmentRecipients(deps: AudienceDeps, accountId: string, row: { rules_operator: RulesOperator; rules: string }): Promise<number> {
  return segmentQueries.countRecipients(deps, accountId, compileRuleSet(deps.dialect, ruleSetOf(row)))
}

export async function createSegment(deps: AudienceDeps, accountId: string, input: SegmentBody): Promise<string> {
  const name = segmentName(input.name)
  const ruleSet = await checkRuleSet(deps, accountId, input.rulesOperator, input.rules)
  const id = newId()
  const at = deps.clock.now().toISOString()
  await segmentQueries.insertSegment(deps.db, {
    id,
    account_id: accountId,
    name,
    description: input.description?.trim() ?? '',
    rules_operator: ruleSet.operator,
    rules: JSON.stringify(ruleSet.rules),
    contact_count: null,
    counted_at: null,
    count_stale_since: at,
    count_touched_at: at,
    created_at: at,
    updated_at: at,
  })
  return id
}

/** A cached count, or a live one when the segment has not been counted since its rules were set. */
async function contactCountOf(deps: AudienceDeps, row: SegmentRow): Promise<number> {
  return row.contact_count === null ? countSegmentRecipients(deps, row.account_id, row) : Number(row.contact_count)
}

export async function listSegments(deps: AudienceDeps, accountId: string, query: PageRequest & { search?: string | undefined }): Promise<Page<SegmentListItem>> {
  const [totalCount, rows] = await Promise.all([
    segmentQueries.countSegments(deps.db, deps.dialect, accountId, query.search),
    segmentQueries.listSegments(deps.db, deps.dialect, accountId, query.search, query.pageSize, offsetOf(query)),
  ])
  const items: SegmentListItem[] = []
  for (const row of rows) {
    items.push({
      id: row.id,
      name: row.name,
      description: row.description ?? '',
      rulesOperator: row.rules_operator,
      contactCount: await contactCountOf(deps, row),
      createdAt: row.created_at,
    })
  }
  return toPage(items, totalCount, query)
}

async function toSegment(deps: AudienceDeps, row: SegmentRow): Promise<Segment> {
  return {
    id: row.id,
    name: row.name,
    description: row.description ?? '',
    rulesOperator: row.rules_operator,
    rules: row.rules,
    contactCount: await contactCountOf(deps, row),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

export async function getSegment(deps: AudienceDeps, accountId: string, segmentId: string): Promise<Segment> {
  const row = await segmentQueries.findSegment(deps.db, accountId, segmentId)
  if (!row) throw new NotFound('segment', segmentId)
  return toSegment(deps, row)
}

/** PUT: replaces name, description, rulesOperator and rules; omitted optional fields take their defaults. */
export async function replaceSegment(deps: AudienceDeps, accountId: string, segmentId: string, input: SegmentBody): Promise<Segment> {
  const name = segmentName(input.name)
  const ruleSet = await checkRuleSet(deps, accountId, input.rulesOperator, input.rules)
  const replaced = await deps.db.transaction().execute((trx) =>
    segmentQueries.replaceSegment(trx, accountId, segmentId, {
      name,
      description: input.description?.trim() ?? '',
      rules_operator: ruleSet.operator,
      rules: JSON.stringify(ruleSet.rules),
      updated_at: deps.clock.now().toISOString(),
    }),
  )
  if (!replaced) throw new NotFound('segment', segmentId)
  return getSegment(deps, accountId, segmentId)
}

export async function deleteSegment(deps: AudienceDeps, accountId: string, segmentId: string): Promise<void> {
  if (!(await segmentQueries.deleteSegment(deps.db, accountId, segmentId))) throw new NotFound('segment', segmentId)
}

async function preview(deps: AudienceDeps, accountId: string, ruleSet: RuleSet, limit: number): Promise<SegmentPreview> {
  const predicate = compileRuleSet(deps.dialect, ruleSet)
  const [counts, sample] = await Promise.all([
    segmentQueries.countAudience(deps, accountId, predicate),
    limit > 0 ? segmentQueries.sampleRecipients(deps, accountId, predicate, limit) : Promise.resolve([]),
  ])
  return { count: counts.recipients, optedOut: counts.optedOut, sample: sample.map((row) => toContact(deps, row)) }
}

export async function previewSegment(deps: AudienceDeps, accountId: string, segmentId: string, limit: number): Promise<SegmentPreview> {
  const row = await segmentQueries.findSegment(deps.db, accountId, segmentId)
  if (!row) throw new NotFound('segment', segmentId)
  return preview(deps, accountId, ruleSetOf(row), limit)
}

export async function previewRules(
  deps: AudienceDeps,
  accountId: string,
  input: { rulesOperator?: RulesOperator | undefined; rules?: string | undefined },
  limit: number,
): Promise<SegmentPreview> {
  return preview(deps, accountId, await checkRuleSet(deps, accountId, input.rulesOperator, input.rules), limit)
}
