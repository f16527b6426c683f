/** bench:push's messages go to stderr; a failure before the runs ends it with a message and exit code 2 (or `code`). */
export const log = (message: string) => process.stderr.write(`${message}\n`)

export function fail(message: string, code = 2): never {
  log(`bench:push: ${message}`)
  process.exit(code)
}
