import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { ListSegmentsQuery, PreviewBody, PreviewQuery, Segment, SegmentBody, SegmentListItem, SegmentPreview } from './schemas.js'
import { createSegment, deleteSegment, getSegment, listSegments, previewRules, previewSegment, replaceSegment } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const RULES_LIST = problemResponses({ 404: 'A contactListId rule names no list of this account' })
const NO_SEGMENT = problemResponses({ 404: 'The segment does not exist, or belongs to another account' })
const RULES = 'Rules are checked as a whole: every bad rule is named in the 422 (`rules[2].operator`); at most 100 rules.'

export const segmentRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/audience/segments', {
    schema: {
      operationId: 'createSegment',
      tags: ['segments'],
      summary: 'Create a segment',
      description: `Saves a name (not blank), a description and rules, and answers 201 with the segment's id as a bare JSON string and a Location header. ${RULES}`,
      body: SegmentBody,
      response: { 201: { ...CreatedId, headers: locationHeader('/v1/audience/segments/{id}') }, ...RULES_LIST },
    },
    config: { auth },
  }, async (request, reply) => {
    const id = await createSegment(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/audience/segments/${id}`)
  })

  app.get('/v1/audience/segments', {
    schema: {
      operationId: 'listSegments',
      tags: ['segments'],
      summary: 'List segments',
      description:
        'Segments of the account without their rules, newest first, optionally only those whose name matches `search`. `contactCount` is served from a cache refreshed in the background (stale for at most SEGMENT_COUNT_MAX_STALE_MS, 30 s by default, while changes keep coming).',
      querystring: ListSegmentsQuery,
      response: { 200: PageOf(SegmentListItem) },
    },
    config: { auth },
  }, (request) => listSegments(deps, accountIdOf(request), request.query))

  app.post('/v1/audience/segments/preview', {
    schema: {
      operationId: 'previewSegmentRules',
      tags: ['segments'],
      summary: 'Preview the audience of unsaved rules',
      description: `Counts, live, the contacts the rules match that a broadcast would send to, the opted-out ones apart, and answers a sample of up to \`limit\` of them. Nothing is saved. ${RULES}`,
      body: PreviewBody,
      querystring: PreviewQuery,
      response: { 200: SegmentPreview, ...RULES_LIST },
    },
    config: { auth },
  }, (request) => previewRules(deps, accountIdOf(request), request.body, request.query.limit))

  app.get('/v1/audience/segments/:id', {
    schema: {
      operationId: 'getSegment',
      tags: ['segments'],
      summary: 'Get a segment',
      description: 'A segment with its rules and its contact count (counted live on the first read after a change, else from the background cache).',
      params: IdParams,
      response: { 200: Segment, ...NO_SEGMENT },
    },
    config: { auth },
  }, (request) => getSegment(deps, accountIdOf(request), request.params.id))

  app.get('/v1/audience/segments/:id/preview', {
    schema: {
      operationId: 'previewSegment',
      tags: ['segments'],
      summary: 'Preview the audience of a segment',
      description: 'Counts, live, the contacts a broadcast to the segment would send to now, the opted-out ones apart, and answers a sample of up to `limit` of them.',
      params: IdParams,
      querystring: PreviewQuery,
      response: { 200: SegmentPreview, ...NO_SEGMENT },
    },
    config: { auth },
  }, (request) => previewSegment(deps, accountIdOf(request), request.params.id, request.query.limit))

  app.put('/v1/audience/segments/:id', {
    schema: {
      operationId: 'replaceSegment',
      tags: ['segments'],
      summary: 'Replace a segment',
      description: `Replaces the name, description, rulesOperator and rules (absent ones take their defaults: no description, AND, "[]"). ${RULES}`,
      params: IdParams,
      body: SegmentBody,
      response: { 200: Segment, ...problemResponses({ 404: 'The segment, or a list a contactListId rule names, does not exist or belongs to another account' }) },
    },
    config: { auth },
  }, (request) => replaceSegment(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/audience/segments/:id', {
    schema: {
      operationId: 'deleteSegment',
      tags: ['segments'],
      summary: 'Delete a segment',
      description: 'Deletes the segment for good.',
      params: IdParams,
      response: { ...NoContent, ...NO_SEGMENT },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteSegment(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
