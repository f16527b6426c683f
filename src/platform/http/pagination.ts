import { Type, type Static, type TSchema } from 'typebox'

export interface PageLimits {
  defaultSize: number
  maxSize: number
}

export const MAX_PAGE_NUMBER = 2_147_483_647

/**
 * Query parameters of a paginated list: pageNumber and pageSize with the endpoint's limits.
 * Both are optional for the client: validation fills in the defaults (ajv's useDefaults),
 * so handlers always see them set, and the OpenAPI document lists them as optional
 * (openapi.ts: a parameter with a default is not required).
 */
export function pageQuery(limits: PageLimits) {
  return {
    // Bounded so the row offset stays an exact integer the stores accept; past the end is an empty page anyway.
    pageNumber: Type.Integer({ minimum: 1, maximum: MAX_PAGE_NUMBER, default: 1, description: 'Page to return, from 1' }),
    pageSize: Type.Integer({
      minimum: 1,
      maximum: limits.maxSize,
      default: limits.defaultSize,
      description: `Items per page, 1 to ${limits.maxSize}`,
    }),
  }
}

/** The paginated list envelope of the spec, for items of `item`. */
export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    totalCount: Type.Integer(),
    pageNumber: Type.Integer(),
    totalPages: Type.Integer(),
    hasNextPage: Type.Boolean(),
    hasPreviousPage: Type.Boolean(),
  })
}

export interface Page<T> {
  items: T[]
  totalCount: number
  pageNumber: number
  totalPages: number
  hasNextPage: boolean
  hasPreviousPage: boolean
}

export interface PageRequest {
  pageNumber: number
  pageSize: number
}

export function offsetOf(page: PageRequest): number {
  return (page.pageNumber - 1) * page.pageSize
}

export function toPage<T>(items: T[], totalCount: number, page: PageRequest): Page<T> {
  const totalPages = Math.ceil(totalCount / page.pageSize)
  return {
    items,
    totalCount,
    pageNumber: page.pageNumber,
    totalPages,
    hasNextPage: page.pageNumber < totalPages,
    hasPreviousPage: page.pageNumber > 1,
  }
}

