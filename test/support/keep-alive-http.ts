import { Agent, request } from 'node:http'

export interface PlainResponse {
  status: number
  contentType: string
  text: string
}

export interface PlainRequest {
  method: string
  /** Sent as-is: percent-encoding, `..` and all, which fetch would normalise. */
  target: string
  headers: Record<string, string>
  body?: string
}

/**
 * A client for many requests in a row: connections are kept alive and at most
 * `connections` requests are in flight, the rest wait their turn.
 */
export class KeepAliveClient {
  private readonly agent: Agent
  private readonly url: URL

  constructor(baseUrl: string, connections: number) {
    this.url = new URL(baseUrl)
    this.agent = new Agent({ keepAlive: true, maxSockets: connections })
  }

  send(options: PlainRequest): Promise<PlainResponse> {
    const headers = { ...options.headers }
    // Framed by length, so a body is taken on any method.
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body))
    return new Promise((resolve, reject) => {
      const req = request(
        { host: this.url.hostname, port: this.url.port, method: options.method, path: options.target, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', text: Buffer.concat(chunks).toString('utf8') }),
          )
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end(options.body)
    })
  }

  close(): void {
    this.agent.destroy()
  }
}
