import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import type { AudienceDeps } from '../deps.js'
import { Contact, CreateContactBody, CreateContactsBody, CreateContactsResult, ListContactsQuery, UpdateContactBody } from './schemas.js'
import { createContact, createContacts, deleteContact, getContact, listContacts, updateContact } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const NO_LIST = problemResponses({ 404: 'contactListId names no list of this account' })
const NO_CONTACT = problemResponses({ 404: 'The contact does not exist, or belongs to another account' })

export const contactRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.post('/v1/contacts', {
    schema: {
      operationId: 'createContacts',
      tags: ['contacts'],
      summary: 'Create contacts from phone numbers',
      description:
        'Creates a contact for each valid number of a comma-separated string (at most 10,000 numbers; use the CSV import for more), optionally adding each to a list. Numbers already known are reused untouched (`existing`); repeats count once (`duplicates`); invalid ones are reported in `invalid` and skipped, unless none is valid (422). A number is valid in international format, with + or 00 and the country code (spaces and punctuation allowed), and when it belongs to an assigned range; it is stored as E.164.',
      body: CreateContactsBody,
      response: { 201: CreateContactsResult, ...NO_LIST },
    },
    config: { auth },
  }, async (request, reply) => reply.code(201).send(await createContacts(deps, accountIdOf(request), request.body)))

  app.post('/v1/contacts/single', {
    schema: {
      operationId: 'createContact',
      tags: ['contacts'],
      summary: 'Create one contact',
      description:
        'Creates a contact with names, email and attributes (201), or answers the existing contact of that number unchanged (200); either way with a Location header. The phone number must be valid in international format (+ or 00 and the country code; spaces and punctuation allowed) and is stored as E.164. With `contactListId` the contact is also added to that list.',
      body: CreateContactBody,
      response: {
        200: { ...Contact, description: 'The number was known: the existing contact, unchanged', headers: locationHeader('/v1/contacts/{id}') },
        201: { ...Contact, description: 'Created', headers: locationHeader('/v1/contacts/{id}') },
        ...NO_LIST,
      },
    },
    config: { auth },
  }, async (request, reply) => {
    const { contact, created } = await createContact(deps, accountIdOf(request), request.body)
    return reply.code(created ? 201 : 200).header('location', `/v1/contacts/${contact.id}`).send(contact)
  })

  app.get('/v1/contacts', {
    schema: {
      operationId: 'listContacts',
      tags: ['contacts'],
      summary: 'List contacts',
      description: 'Contacts of the account, newest first, optionally only those matching `search` (any case) or the members of a list.',
      querystring: ListContactsQuery,
      response: { 200: PageOf(Contact), ...NO_LIST },
    },
    config: { auth },
  }, (request) => listContacts(deps, accountIdOf(request), request.query))

  app.get('/v1/contacts/:id', {
    schema: {
      operationId: 'getContact',
      tags: ['contacts'],
      summary: 'Get a contact',
      description: 'One contact of the account, with its attributes and opt-out state.',
      params: IdParams,
      response: { 200: Contact, ...NO_CONTACT },
    },
    config: { auth },
  }, (request) => getContact(deps, accountIdOf(request), request.params.id))

  app.patch('/v1/contacts/:id', {
    schema: {
      operationId: 'updateContact',
      tags: ['contacts'],
      summary: 'Change a contact',
      description:
        'Changes names, email or `optedOut`, each only when given (null clears a name or the email). `attributes` are merged into the contact\'s: a name set to null is removed; the contact may hold at most 50 attributes after the merge (else 422). The phone number cannot change.',
      params: IdParams,
      body: UpdateContactBody,
      response: { 200: Contact, ...NO_CONTACT },
    },
    config: { auth },
  }, (request) => updateContact(deps, accountIdOf(request), request.params.id, request.body))

  app.delete('/v1/contacts/:id', {
    schema: {
      operationId: 'deleteContact',
      tags: ['contacts'],
      summary: 'Delete a contact',
      description: 'Deletes the contact for good, and with it its list memberships; fires ContactDeleted.',
      params: IdParams,
      response: { ...NoContent, ...NO_CONTACT },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteContact(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
