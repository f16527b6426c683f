import { pino, type DestinationStream, type Logger } from 'pino'
import type { Config } from './config.js'

/** Query parameters that carry credentials (the push stream takes its token in the URL). */
const SECRET_QUERY = /([?&](?:token|key|secret)=)[^&]*/gi

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]')
}

/** JSON logs. Credentials never reach them: headers are not logged and secret query values are masked. */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    serializers: {
      req: (req: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
        method: req.method,
        url: redactUrl(req.url ?? ''),
        remoteAddress: req.ip ?? req.socket?.remoteAddress,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      err: pino.stdSerializers.err,
    },
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'password', '*.password', 'token', '*.token', 'rawKey'],
      censor: '[redacted]',
    },
  }
  return destination ? pino(options, destination) : pino(options)
}
