/**
 * A template rendered by the store, for every recipient in one INSERT … SELECT: the same
 * text renderText (template.ts) gives, from the contacts row. Literal text is bound as
 * parameters, never written into the SQL.
 *
 * Attribute numbers: the API and the import store attributes as JSON.stringify writes
 * them, which is String(n). SQLite's `->` gives a number's JSON text as stored, so it
 * agrees always. PostgreSQL's jsonb keeps numbers as numeric and prints them without an
 * exponent, so it agrees except for non-zero numbers under 1e-6 in magnitude, which
 * JavaScript writes with one (1e-7 against 0.0000001); numbers from 1e21 up would differ
 * too, but attributes stop at 1e15.
 */
import { sql, type RawBuilder } from 'kysely'
import type { Template, TemplateField } from './template.js'

type Store = 'sqlite' | 'postgres'

/**
 * The rendered text as one SQL expression over the `contacts` table's columns
 * (first_name, last_name, phone_number, attributes), for the store's dialect. Tracked
 * link i renders as `${linkPrefix}` || <linkCode> || 'i'. linkCode is an SQL expression
 * of the recipient's 14-char code (required when template.links is non-empty); it is
 * written once per link, so with several links pass a column that holds the code, not
 * randomLinkCode() itself, or each link would get a code of its own.
 */
export function renderSql(template: Template, store: Store, linkPrefix: string, linkCode?: RawBuilder<string>): RawBuilder<string> {
  if (template.links.length > 0 && linkCode === undefined) throw new Error('a template with tracked links needs a link code to render')
  const parts = template.pieces.map((piece) => {
    if ('text' in piece) return text(piece.text, store)
    if ('link' in piece) return sql`${text(linkPrefix, store)} || ${store === 'postgres' ? sql`cast(${linkCode} as text)` : linkCode} || ${text(String(piece.link), store)}`
    // nullif and coalesce: a missing value (null, '' or absent) is the fallback, and a
    // null never reaches ||, which would make the whole text null.
    return sql`coalesce(nullif(${fieldSql(piece.field, store)}, ''), ${text(piece.fallback, store)})`
  })
  if (parts.length === 0) return sql<string>`${text('', store)}`
  return sql<string>`(${sql.join(parts, sql` || `)})`
}

/**
 * A fresh random 14-lowercase-hex-character link code per row (at least 56 bits): SQLite
 * lower(hex(randomblob(7))), PostgreSQL substr(md5(gen_random_uuid()::text), 1, 14).
 */
export function randomLinkCode(store: Store): RawBuilder<string> {
  return store === 'postgres' ? sql<string>`substr(md5(gen_random_uuid()::text), 1, 14)` : sql<string>`lower(hex(randomblob(7)))`
}

/** A bound text parameter; PostgreSQL cannot infer the type of a parameter between two ||. */
function text(value: string, store: Store): RawBuilder<string> {
  return store === 'postgres' ? sql<string>`cast(${value} as text)` : sql<string>`${value}`
}

function fieldSql(field: TemplateField, store: Store): RawBuilder<unknown> {
  if (field === 'firstName') return sql.ref('contacts.first_name')
  if (field === 'lastName') return sql.ref('contacts.last_name')
  if (field === 'phoneNumber') return sql.ref('contacts.phone_number')
  const attributes = sql.ref('contacts.attributes')
  if (store === 'postgres') return sql`(${attributes} ->> ${text(field.attribute, store)})`
  // `->>` gives a string unquoted and an integer as an integer, which a cast prints
  // exactly; a real it would print as a double (1.0e-07), so reals are taken as their
  // JSON text. The key is letters, digits, _ and - (template.ts), so quoting it in the
  // path is enough.
  const path = `$."${field.attribute}"`
  return sql`cast(case json_type(${attributes}, ${path}) when 'real' then ${attributes} -> ${path} else ${attributes} ->> ${path} end as text)`
}
