/**
 * Command-line flags of the benchmarks: each bench declares its flags once and gets
 * typed values back.
 *
 *   const { flags } = parseFlags({
 *     store: flag.string('sqlite'),      // text as given (undefined when absent and no default)
 *     contacts: flag.number(1_000_000),  // Number(text): NaN when it is not a number
 *     strict: flag.boolean(),            // --strict; false when absent. --no-paced is a flag of its own
 *     'node-arg': flag.list(),           // repeatable: --node-arg A --node-arg=B; [] when absent
 *   })
 *
 * Parsing is node:util's parseArgs in strict mode, as every bench used before: an unknown
 * flag, a flag without its value, or a positional argument where none is allowed throws
 * parseArgs's TypeError (ERR_PARSE_ARGS_UNKNOWN_OPTION and the like), which ends the
 * process with exit code 1.
 *
 * A number that must be valid (a positive integer, say) is declared as a string and checked
 * with positiveInteger() and the like below, at the point where the bench checks it: the
 * bench keeps its order of checks (--help first, then --store, …) and its messages.
 */
import { parseArgs } from 'node:util'

interface StringFlag<D extends string | undefined> {
  kind: 'string'
  default: D
}
interface NumberFlag<D extends number | undefined> {
  kind: 'number'
  default: D
}
interface BooleanFlag {
  kind: 'boolean'
  default: boolean
}
interface ListFlag {
  kind: 'list'
}
export type FlagSpec = StringFlag<string | undefined> | NumberFlag<number | undefined> | BooleanFlag | ListFlag

type ValueOf<F> =
  F extends StringFlag<infer D> ? (D extends string ? string : string | undefined)
  : F extends NumberFlag<infer D> ? (D extends number ? number : number | undefined)
  : F extends BooleanFlag ? boolean
  : F extends ListFlag ? string[]
  : never

export type FlagValues<S extends Record<string, FlagSpec>> = { [K in keyof S]: ValueOf<S[K]> }

function string(): StringFlag<undefined>
function string(defaultValue: string): StringFlag<string>
function string(defaultValue?: string): StringFlag<string | undefined> {
  return { kind: 'string', default: defaultValue }
}

function number(): NumberFlag<undefined>
function number(defaultValue: number): NumberFlag<number>
function number(defaultValue?: number): NumberFlag<number | undefined> {
  return { kind: 'number', default: defaultValue }
}

export const flag = {
  string,
  /** Converted with Number(), unchecked: NaN for text that is not a number, 0 for "". */
  number,
  boolean: (defaultValue = false): BooleanFlag => ({ kind: 'boolean', default: defaultValue }),
  /** Repeatable; every occurrence, in order. */
  list: (): ListFlag => ({ kind: 'list' }),
}

type ParseArgsOption = { type: 'string' | 'boolean'; multiple?: boolean; default?: string | boolean | string[] }

/**
 * Parses process.argv (or `args`) against `spec`. With `positionals: true`, arguments
 * that are not flags (and everything after `--`) come back in `positionals`; otherwise
 * they are rejected.
 */
export function parseFlags<S extends Record<string, FlagSpec>>(
  spec: S,
  options: { positionals?: boolean; args?: string[] } = {},
): { flags: FlagValues<S>; positionals: string[] } {
  const parseOptions: Record<string, ParseArgsOption> = {}
  for (const [name, f] of Object.entries(spec)) {
    if (f.kind === 'boolean') parseOptions[name] = { type: 'boolean', default: f.default }
    else if (f.kind === 'list') parseOptions[name] = { type: 'string', multiple: true, default: [] }
    else if (f.kind === 'string' && f.default !== undefined) parseOptions[name] = { type: 'string', default: f.default }
    else parseOptions[name] = { type: 'string' }
  }
  const { values, positionals } = parseArgs({
    ...(options.args ? { args: options.args } : {}),
    options: parseOptions,
    strict: true,
    allowPositionals: options.positionals ?? false,
  })
  const flags: Record<string, unknown> = {}
  for (const [name, f] of Object.entries(spec)) {
    const raw = (values as Record<string, unknown>)[name]
    flags[name] = f.kind === 'number' ? (raw === undefined ? f.default : Number(raw)) : raw
  }
  return { flags: flags as FlagValues<S>, positionals }
}

// ------------------------------------------------------------------ checked numbers
// Each prints `<prefix>--<name> must be <what>, got "<raw>"` on stderr and exits 2 when the
// text does not qualify; otherwise returns the number.

function reject(prefix: string, name: string, what: string, raw: string | undefined): never {
  console.error(`${prefix}--${name} must be ${what}, got "${raw}"`)
  process.exit(2)
}

/** An integer above 0. */
export function positiveInteger(name: string, raw: string | undefined, prefix = ''): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value <= 0) reject(prefix, name, 'a positive integer', raw)
  return value
}

/** 0 (any text Number() reads as 0), or else an integer above 0. */
export function positiveIntegerOrZero(name: string, raw: string | undefined, prefix = ''): number {
  return Number(raw) === 0 ? 0 : positiveInteger(name, raw, prefix)
}

/** A finite number above 0. */
export function positiveNumber(name: string, raw: string | undefined, prefix = ''): number {
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) reject(prefix, name, 'a positive number', raw)
  return value
}

/** A finite number, 0 or above. */
export function nonNegativeNumber(name: string, raw: string | undefined, prefix = ''): number {
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) reject(prefix, name, 'a non-negative number', raw)
  return value
}

/** An integer, `min` or above. */
export function integerAtLeast(name: string, raw: string | undefined, min: number, prefix = ''): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min) reject(prefix, name, `an integer of at least ${min}`, raw)
  return value
}
