import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { PageOf } from '../../platform/http/pagination.js'
import { AUTH } from '../../platform/http/principal.js'
import { sendCreatedId } from '../../platform/http/replies.js'
import { CreatedId, IdParams, problemResponses } from '../../platform/http/schemas.js'
import { RAW_BODY } from '../../platform/http/validation.js'
import { Readable } from 'node:stream'
import { UnsupportedMediaType } from '../../platform/problems.js'
import { Type } from 'typebox'
import { createContact, createContacts, deleteContact, getContact, listContacts, updateContact } from './contacts/service.js'
import type { AudienceDeps } from './deps.js'
import type { ContactImporter } from './imports/service.js'
import { addToList, createList, deleteList, listLists, removeFromList } from './lists/service.js'
import {
  AddToListBody,
  AddToListResult,
  Contact,
  ContactImport,
  ContactImportQuery,
  ContactList,
  CreateContactBody,
  CreateContactsBody,
  CreateContactsResult,
  CreateListBody,
  ImportAccepted,
  ListContactsQuery,
  ListListsQuery,
  ListMemberParams,
  ListSegmentsQuery,
  PreviewBody,
  PreviewQuery,
  Segment,
  SegmentBody,
  SegmentListItem,
  SegmentPreview,
  UpdateContactBody,
} from './schemas.js'
import { createSegment, deleteSegment, getSegment, listSegments, previewRules, previewSegment, replaceSegment } from './segments/service.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

const CsvUpload = Type.String({
  [RAW_BODY]: true,
  description:
    'CSV with a header row: a phoneNumber column (also phone, mobile, msisdn), optional firstName, lastName, email; every other column becomes an attribute',
  examples: ['phoneNumber,firstName,plan\n+14155550100,Ada,gold\n'],
})

export const audienceRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps; importer: ContactImporter }> = async (app, { deps, importer }) => {
  // The upload is handed to the importer as a stream; Fastify never buffers it.
  app.addContentTypeParser(['text/csv', 'application/csv'], (_request, payload, done) => done(null, payload))

  app.post('/v1/contacts/import', {
    schema: {
      tags: ['contacts'],
      summary: 'Import contacts from CSV in the background; poll the import for progress and per-row errors',
      consumes: ['text/csv'],
      body: CsvUpload,
      querystring: ContactImportQuery,
      response: { 202: ImportAccepted, ...WRITE },
    },
    config: { auth },
  }, async (request, reply) => {
    // Any other content type reaches here already parsed: only text/csv arrives as a stream.
    const upload: unknown = request.body
    if (!(upload instanceof Readable)) throw new UnsupportedMediaType('Send the file as text/csv')
    const importId = await importer.accept(accountIdOf(request), request.query.contactListId, upload)
    return reply.code(202).header('location', `/v1/contacts/imports/${importId}`).send({ importId })
  })

  app.get('/v1/contacts/imports/:id', {
    schema: { tags: ['contacts'], summary: 'Progress and per-row errors of a CSV import', params: IdParams, response: { 200: ContactImport, ...READ } },
    config: { auth },
  }, (request) => importer.get(accountIdOf(request), request.params.id))

  // ---- contacts ----
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

  // ---- contact lists ----
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

  // ---- segments ----
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
