import type { FastifyReply } from 'fastify'

/**
 * Sends a bare JSON string (`"0193…"`). Fastify writes a string payload as-is, without
 * its serializer, so the quoting is done here.
 */
export function sendJsonString(reply: FastifyReply, status: number, value: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').serializer((v) => v as string).send(JSON.stringify(value))
}

/** 201 with the new id as a JSON string and a Location header, as every create of an id does. */
export function sendCreatedId(reply: FastifyReply, id: string, location: string): FastifyReply {
  return sendJsonString(reply.header('location', location), 201, id)
}
