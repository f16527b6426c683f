import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { ListSegmentsQuery, PreviewBody, PreviewQuery, Segment, SegmentBody, SegmentListItem, SegmentPreview } from './schemas.js'
import { createSegment, deleteSegment, getSegment, listSegments, previewRules, previewSegment, replaceSegment } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

export const segmentRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/audience/segments', {
    schema: { tags: ['segments'], summary: 'Create a segment; the body is its id', body: SegmentBody, response: { 201: CreatedId, ...WRITE } },
    config: { auth },
  }, async (request, reply) => {
    const id = await createSegment(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/audience/segments/${id}`)
  })

  app.get('/v1/audience/segments', {
    schema: { tags: ['segments'], summary: 'List segments (without rules), newest first', querystring: ListSegmentsQuery, response: { 200: PageOf(SegmentListItem), ...READ } },
    config: { auth },
  }, (request) => listSegments(deps, accountIdOf(request), request.query))

  app.post('/v1/audience/segments/preview', {
    schema: { tags: ['segments'], summary: 'Count and sample the audience of unsaved rules', body: PreviewBody, querystring: PreviewQuery, response: { 200: SegmentPreview, ...WRITE } },
    config: { auth },
  }, (request) => previewRules(deps, accountIdOf(request), request.body, request.query.limit))

  app.get('/v1/audience/segments/:id', {
    schema: { tags: ['segments'], summary: 'Get a segment with its rules', params: IdParams, response: { 200: Segment, ...READ } },
    config: { auth },
  }, (request) => getSegment(deps, accountIdOf(request), request.params.id))

  app.get('/v1/audience/segments/:id/preview', {
    schema: { tags: ['segments'], summary: 'Live count and a sample of the contacts a broadcast would send to now', params: IdParams, querystring: PreviewQuery, response: { 200: SegmentPreview, ...READ } },
    config: { auth },
  }, (request) => previewSegment(deps, accountIdOf(request), request.params.id, request.query.limit))

  app.put('/v1/audience/segments/:id', {
    schema: { tags: ['segments'], summary: 'Replace name, description, rulesOperator and rules', params: IdParams, body: SegmentBody, response: { 200: Segment, ...WRITE } },
    config: { auth },
  }, (request) => replaceSegment(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/audience/segments/:id', {
    schema: { tags: ['segments'], summary: 'Delete a segment for good', params: IdParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await deleteSegment(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
