import pg from 'pg'
import type { TypeParserLookup } from './pg-named.js'

// int8 (counts, balances, sequence ids) would otherwise come back as strings; every
// such value this service keeps fits in 2^53.
const INT8_OID = 20
const NUMERIC_OID = 1700

/** How every connection of the store turns a column's text into a value: pg's own, but int8 and numeric as numbers. */
export const typeParser: TypeParserLookup = (oid, format) => {
  if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value)
  return pg.types.getTypeParser(oid, format)
}

/** A connection to `url`, its unqualified names resolved in `schema` when given, values read by typeParser. */
export function postgresClientConfig(url: string, schema: string | undefined): pg.ClientConfig {
  return {
    connectionString: url,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  }
}
