/** Audience: contacts, contact lists, rule-based segments and the rule compiler. */
export { createAudience, type AudienceOptions } from './audience.js'
/** Compiles a segment's rules to one SQL predicate over `contacts` (for broadcasts: INSERT … SELECT). */
export { compileRuleSet } from './segments/sql.js'
export { parseRules, type Rule, type RuleSet } from './segments/rules.js'
/** A broadcast's audience (a contact list or a segment) as one SQL predicate over `contacts`; 404 for a missing or foreign one. */
export { compileAudience } from './segments/service.js'
/** Opt-out by phone number, for sends (skip), dispatch claims (skip) and inbound STOP/START (record). */
export { optedOutAmong, optedOutTerm, setOptedOut } from './opt-out.js'
/**
 * Live counts of the contacts a predicate selects, off the request connection on SQLite:
 * countRecipients leaves opted-out ones out (what a broadcast sends to); countAudience
 * splits them (what a segment preview shows).
 */
export { countAudience, countRecipients, tallyRecipients } from './segments/queries.js'
