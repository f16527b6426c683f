import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import { Carrier, CreateCarrierBody, ListCarriersQuery, PutRoutesBody, RoutesResult, UpdateCarrierBody } from './schemas.js'
import { createCarrier, deleteCarrier, getCarrier, getRoutes, listCarriers, putRoutes, updateCarrier, type RoutingAdminDeps } from './service.js'

const auth = AUTH.admin
const tags = ['admin']
const NoContent = { 204: { type: 'null', description: 'Deleted' } }
const NO_CARRIER = 'No carrier connection has this id'

/** Operators' carrier connections and route table (ADMIN_TOKEN); registered only when the server has one. */
export const routingRoutes: FastifyPluginAsyncTypebox<{ deps: RoutingAdminDeps }> = async (app, { deps }) => {
  app.post('/v1/admin/carriers', {
    schema: {
      operationId: 'createCarrier',
      tags,
      summary: 'Create a carrier connection',
      description:
        'Adds a connection of type `simulator`, `smpp` or `twilio` with that type’s config, and answers 201 with its id as a bare JSON string and a Location header. Every node starts it within 5 s; routes name it by `name`. Secrets (the SMPP password, the Twilio auth token) are write-only.',
      body: CreateCarrierBody,
      response: { 201: { ...CreatedId, headers: locationHeader('/v1/admin/carriers/{id}') }, ...problemResponses({ 409: 'A connection has this name (`default` is the one CARRIER and SMPP_URL make)' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    const id = await createCarrier(deps, request.body)
    return sendCreatedId(reply, id, `/v1/admin/carriers/${id}`)
  })

  app.get('/v1/admin/carriers', {
    schema: {
      operationId: 'listCarriers',
      tags,
      summary: 'List carrier connections',
      description: 'Every connection by name, the one CARRIER and SMPP_URL make (`default`) first, each with its live state on the node that answers.',
      querystring: ListCarriersQuery,
      response: { 200: PageOf(Carrier) },
    },
    config: { auth },
  }, (request) => listCarriers(deps, request.query))

  app.get('/v1/admin/carriers/:id', {
    schema: {
      operationId: 'getCarrier',
      tags,
      summary: 'Get a carrier connection',
      description: 'A connection, its config with secrets masked, and its live state on the node that answers (up, connecting, down or disabled, since when, parts in flight, parts sent in the last minute, the last error).',
      params: IdParams,
      response: { 200: Carrier, ...problemResponses({ 404: NO_CARRIER }) },
    },
    config: { auth },
  }, (request) => getCarrier(deps, request.params.id))

  app.patch('/v1/admin/carriers/:id', {
    schema: {
      operationId: 'updateCarrier',
      tags,
      summary: 'Change a carrier connection',
      description:
        'Changes the name, `enabled` or the config (the whole config of its type; a secret left out, or sent back as ********, stays as it was). Every node applies it within 5 s: a changed config reconnects, a disabled connection is skipped by every route. A rename carries over into the routes.',
      params: IdParams,
      body: UpdateCarrierBody,
      response: { 200: Carrier, ...problemResponses({ 404: NO_CARRIER, 409: 'The name is taken, or the connection is the one CARRIER and SMPP_URL make' }) },
    },
    config: { auth },
  }, (request) => updateCarrier(deps, request.params.id, request.body))

  app.delete('/v1/admin/carriers/:id', {
    schema: {
      operationId: 'deleteCarrier',
      tags,
      summary: 'Delete a carrier connection',
      description: 'Removes the connection; every node stops it within 5 s. 409 while a route names it.',
      params: IdParams,
      response: { ...NoContent, ...problemResponses({ 404: NO_CARRIER, 409: 'A route names the connection, or it is the one CARRIER and SMPP_URL make' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteCarrier(deps, request.params.id)
    return reply.code(204).send()
  })

  app.get('/v1/admin/routes', {
    schema: {
      operationId: 'getRoutes',
      tags,
      summary: 'Get the route table',
      description: 'The routes in force and the configuration version. While none is stored, the one route `+ -> [default]` at price 1.',
      response: { 200: RoutesResult },
    },
    config: { auth },
  }, () => getRoutes(deps.db))

  app.put('/v1/admin/routes', {
    schema: {
      operationId: 'replaceRoutes',
      tags,
      summary: 'Replace the route table',
      description:
        'Replaces every route at once. A message to a number takes the account’s own route with the longest matching prefix, else the global route with the longest matching prefix; its carriers are tried in order; its price (credits per segment per recipient) is fixed when the send or broadcast is paid for. 422 naming the entry when a carrier is unknown, a prefix repeats for the same account, an account does not exist, or no global "+" route is given.',
      body: PutRoutesBody,
      response: { 200: RoutesResult },
    },
    config: { auth },
  }, (request) => putRoutes(deps, request.body))
}
