import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

/**
 * A TCP forwarder on 127.0.0.1 that keeps its port: a connection made to it is joined to
 * one made to the target. `cut()` closes every connection and stops listening, so the
 * peer is gone as a stopped process is (closed connections, then connection refused);
 * `restore()` listens on the same port again, the peer back where it was. Also serves as
 * an address known before the server behind it starts (a PUBLIC_URL in front of a test
 * server that listens on a random port).
 */
export class TcpProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private listeningPort = 0

  private constructor(private target: { host: string; port: number } | undefined) {}

  /** Listens on a port of the kernel's choosing; forwards to `target` once it is set. */
  static async start(target?: { host?: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target && { host: target.host ?? '127.0.0.1', port: target.port })
    proxy.listeningPort = await proxy.listen(0)
    return proxy
  }

  /** The port it listens on, the same after a restore(). */
  get port(): number {
    return this.listeningPort
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Where new connections go from now on. */
  forwardTo(target: { host?: string; port: number }): void {
    this.target = { host: target.host ?? '127.0.0.1', port: target.port }
  }

  get isListening(): boolean {
    return this.server !== undefined
  }

  /** Closes every connection through it at once and refuses new ones until restore(). */
  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const socket of this.sockets) socket.destroy()
    this.sockets.clear()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Listens on the same port again. */
  async restore(): Promise<void> {
    if (this.server) return
    await this.listen(this.port)
  }

  close(): Promise<void> {
    return this.cut()
  }

  private listen(port: number): Promise<number> {
    const server = createServer((client) => this.join(client))
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject)
        this.server = server
        resolve((server.address() as AddressInfo).port)
      })
    })
  }

  private join(client: Socket): void {
    if (!this.target || !this.server) {
      client.destroy()
      return
    }
    const upstream = createConnection(this.target)
    for (const socket of [client, upstream]) {
      this.sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        this.sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  }
}
