import { Type } from 'typebox'

/** The ids of contacts, lists, imports and segments. */
export const Id = Type.String({ format: 'uuid' })

// imports/service.ts still imports the type from here. Only the type: a value re-export
// would load imports/schemas.ts from here, which imports Id from here (a cycle).
export type { ContactImport } from './imports/schemas.js'
