import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { AddToListBody, AddToListResult, ContactList, CreateListBody, ListListsQuery, ListMemberParams } from './schemas.js'
import { addToList, createList, deleteList, listLists, removeFromList } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

export const listRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/contact-lists', {
    schema: { tags: ['contact lists'], summary: 'Create a contact list; the body is its id', body: CreateListBody, response: { 201: CreatedId, ...WRITE } },
    config: { auth },
  }, async (request, reply) => {
    const id = await createList(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/contact-lists/${id}`)
  })

  app.get('/v1/contact-lists', {
    schema: { tags: ['contact lists'], summary: 'List contact lists with their member counts', querystring: ListListsQuery, response: { 200: PageOf(ContactList), ...READ } },
    config: { auth },
  }, (request) => listLists(deps, accountIdOf(request), request.query))

  app.post('/v1/contact-lists/:id/contacts', {
    schema: { tags: ['contact lists'], summary: 'Add contacts by phone numbers (created as needed) or by ids', params: IdParams, body: AddToListBody, response: { 200: AddToListResult, ...WRITE } },
    config: { auth },
  }, (request) => addToList(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/contact-lists/:id/contacts/:contactId', {
    schema: { tags: ['contact lists'], summary: 'Remove a contact from a list (the contact stays)', params: ListMemberParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await removeFromList(deps, accountIdOf(request), request.params.id, request.params.contactId)
    return reply.code(204).send(null)
  })

  app.delete('/v1/contact-lists/:id', {
    schema: { tags: ['contact lists'], summary: 'Delete a list; its contacts stay', params: IdParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await deleteList(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
