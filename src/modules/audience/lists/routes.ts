import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { AddToListBody, AddToListResult, ContactList, CreateListBody, ListListsQuery, ListMemberParams } from './schemas.js'
import { addToList, createList, deleteList, listLists, removeFromList } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const NO_LIST = problemResponses({ 404: 'The list does not exist, or belongs to another account' })

export const listRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/contact-lists', {
    schema: {
      operationId: 'createContactList',
      tags: ['contact lists'],
      summary: 'Create a contact list',
      description: 'Creates an empty list and answers 201 with its id as a bare JSON string and a Location header. The name must not be blank.',
      body: CreateListBody,
      response: { 201: { ...CreatedId, headers: locationHeader('/v1/contact-lists/{id}') } },
    },
    config: { auth },
  }, async (request, reply) => {
    const id = await createList(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/contact-lists/${id}`)
  })

  app.get('/v1/contact-lists', {
    schema: {
      operationId: 'listContactLists',
      tags: ['contact lists'],
      summary: 'List contact lists',
      description: 'The lists of the account, newest first, with their member counts, optionally only those whose name matches `search`.',
      querystring: ListListsQuery,
      response: { 200: PageOf(ContactList) },
    },
    config: { auth },
  }, (request) => listLists(deps, accountIdOf(request), request.query))

  app.post('/v1/contact-lists/:id/contacts', {
    schema: {
      operationId: 'addContactsToList',
      tags: ['contact lists'],
      summary: 'Add contacts to a list',
      description:
        'Adds contacts by id (`contactIds`, each a contact of the account), or by phone number (`phoneNumbers`, a comma-separated string of at most 10,000 numbers in international format; contacts are created as needed, and any invalid number is a 422). Exactly one of the two. Contacts already members are left as they are; `added` counts the new members.',
      params: IdParams,
      body: AddToListBody,
      response: { 200: AddToListResult, ...problemResponses({ 404: 'The list, or one of contactIds, does not exist or belongs to another account' }) },
    },
    config: { auth },
  }, (request) => addToList(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/contact-lists/:id/contacts/:contactId', {
    schema: {
      operationId: 'removeContactFromList',
      tags: ['contact lists'],
      summary: 'Remove a contact from a list',
      description: 'Removes the contact from the list; the contact itself stays.',
      params: ListMemberParams,
      response: { ...NoContent, ...problemResponses({ 404: 'The list does not exist, or the contact is not in it' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    await removeFromList(deps, accountIdOf(request), request.params.id, request.params.contactId)
    return reply.code(204).send(null)
  })

  app.delete('/v1/contact-lists/:id', {
    schema: {
      operationId: 'deleteContactList',
      tags: ['contact lists'],
      summary: 'Delete a contact list',
      description: 'Deletes the list; its contacts stay.',
      params: IdParams,
      response: { ...NoContent, ...NO_LIST },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteList(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
