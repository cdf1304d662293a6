import { createServer, Socket, type AddressInfo, type Server } from 'node:net';

/**
 * A TCP proxy in front of the test Redis that can lose replies and connections on demand: a real
 * network fault between a client and Redis, with no change to either of them.
 *
 * - 'pass': bytes flow both ways.
 * - 'drop': open connections forward nothing either way (a command sent now is lost, a reply
 *   on its way is lost) and new connections are closed at once (the client keeps reconnecting).
 * - 'swallowReplies': commands reach Redis and run; their replies are thrown away.
 * - 'refuseNew': open connections go on; a new one is closed at once (a client that tries to open
 *   another connection, or to reconnect, cannot).
 * `cut()` closes every open connection, as a network failure would.
 */
export type ProxyMode = 'pass' | 'drop' | 'swallowReplies' | 'refuseNew';

export class FaultyProxy {
  private mode: ProxyMode = 'pass';
  private readonly pairs = new Set<[Socket, Socket]>();

  private constructor(private readonly server: Server, readonly url: string) {}

  /** Starts a proxy to `targetUrl` (redis://host:port) on a free port. */
  static async start(targetUrl: string): Promise<FaultyProxy> {
    const target = new URL(targetUrl);
    let proxy: FaultyProxy | undefined;
    const server = createServer((client) => proxy?.accept(client, target.hostname, Number(target.port)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    proxy = new FaultyProxy(server, `redis://127.0.0.1:${port}`);
    return proxy;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
  }

  /** Closes every open connection (clients see the connection drop). */
  cut(): void {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.mode === 'drop' || this.mode === 'refuseNew') {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (this.mode !== 'drop') upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (this.mode === 'pass' || this.mode === 'refuseNew') client.write(chunk);
    });
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
    upstream.connect(port, host);
  }
}
