import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { Contact, CreateContactBody, CreateContactsBody, CreateContactsResult, ListContactsQuery, UpdateContactBody } from './schemas.js'
import { createContact, createContacts, deleteContact, getContact, listContacts, updateContact } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

export const contactRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/contacts', {
    schema: { tags: ['contacts'], summary: 'Create contacts from a comma-separated string of phone numbers', body: CreateContactsBody, response: { 201: CreateContactsResult, ...WRITE } },
    config: { auth },
  }, async (request, reply) => reply.code(201).send(await createContacts(deps, accountIdOf(request), request.body)))

  app.post('/v1/contacts/single', {
    schema: { tags: ['contacts'], summary: 'Create one contact with names, email and attributes (200 with the existing contact if the number is known)', body: CreateContactBody, response: { 200: Contact, 201: Contact, ...WRITE } },
    config: { auth },
  }, async (request, reply) => {
    const { contact, created } = await createContact(deps, accountIdOf(request), request.body)
    return reply.code(created ? 201 : 200).header('location', `/v1/contacts/${contact.id}`).send(contact)
  })

  app.get('/v1/contacts', {
    schema: { tags: ['contacts'], summary: 'List contacts, newest first', querystring: ListContactsQuery, response: { 200: PageOf(Contact), ...READ } },
    config: { auth },
  }, (request) => listContacts(deps, accountIdOf(request), request.query))

  app.get('/v1/contacts/:id', {
    schema: { tags: ['contacts'], summary: 'Get a contact', params: IdParams, response: { 200: Contact, ...READ } },
    config: { auth },
  }, (request) => getContact(deps, accountIdOf(request), request.params.id))

  app.patch('/v1/contacts/:id', {
    schema: { tags: ['contacts'], summary: 'Change names, email, attributes (merged; null removes) or optedOut', params: IdParams, body: UpdateContactBody, response: { 200: Contact, ...WRITE } },
    config: { auth },
  }, (request) => updateContact(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/contacts/:id', {
    schema: { tags: ['contacts'], summary: 'Delete a contact', params: IdParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await deleteContact(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
