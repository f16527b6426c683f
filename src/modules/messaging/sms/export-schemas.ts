import { Type, type Static } from 'typebox'

export const ExportSmsQuery = Type.Object({
  from: Type.String({ format: 'date-time', description: 'Messages created at or after this instant', examples: ['2026-11-01T00:00:00Z'] }),
  to: Type.String({ format: 'date-time', description: 'Messages created before this instant; after `from`', examples: ['2026-12-01T00:00:00Z'] }),
  // No `default`: absent means csv all the same, and the handler never reads it.
  format: Type.Optional(Type.Literal('csv', { description: 'The file format: only csv for now, which is also what an absent format means' })),
})
export type ExportSmsQuery = Static<typeof ExportSmsQuery>

/** The columns of the message log export, in order. */
export const SMS_EXPORT_COLUMNS = [
  'messageId',
  'broadcastId',
  'phoneNumber',
  'status',
  'carrier',
  'segments',
  'credits',
  'sentAt',
  'deliveredAt',
  'failedAt',
  'error',
] as const
