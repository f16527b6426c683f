import { request } from 'node:http'
import { connect } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

export interface RawRequestOptions {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/**
 * A request through node:http, which unlike fetch sends any method (TRACE, PROPFIND) and
 * a body on GET, as misbehaving clients do.
 */
export function rawRequest(baseUrl: string, options: RawRequestOptions): Promise<RawResponse> {
  const url = new URL(baseUrl)
  const headers: Record<string, string> = { ...options.headers }
  // node:http frames a GET body only when told its length; unframed, it would be read as a second request.
  if (options.body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length')) {
    headers['content-length'] = String(Buffer.byteLength(options.body))
  }
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: options.method, path: options.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/**
 * Writes bytes to a fresh connection and resolves with the status of the first response
 * line, or 0 when the server closed the connection without answering.
 */
export function rawExchange(baseUrl: string, bytes: string | Buffer, timeoutMs = 5000): Promise<{ status: number; text: string }> {
  const url = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${timeoutMs} ms`))
    }, timeoutMs)
    const finish = () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('latin1')
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text)
      resolve({ status: match ? Number(match[1]) : 0, text })
    }
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      // One complete response is enough; the server may keep the connection open.
      const text = Buffer.concat(chunks).toString('latin1')
      const headerEnd = text.indexOf('\r\n\r\n')
      if (headerEnd < 0) return
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headerEnd))
      if (!length || text.length - headerEnd - 4 >= Number(length[1])) {
        socket.destroy()
        finish()
      }
    })
    socket.on('end', finish)
    socket.on('close', finish)
    socket.on('error', () => finish())
    socket.write(bytes)
  })
}
