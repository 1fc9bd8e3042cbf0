import { connect, createServer, type Server, type Socket } from 'node:net';
import { parentPort } from 'node:worker_threads';

/**
 * The proxies' thread (tcp-proxy.ts starts it): each a TCP proxy on loopback in front of one Redis
 * server, which the soak slows down.
 *
 * Latency applies to the brokers' connections only, each way: a connection whose first command is
 * `HELLO` (node-redis speaks RESP3, so every broker connection starts with one). Sentinels
 * (`PING`, `CLIENT SETNAME`...) and replicas (`PING`, `REPLCONF`...) also reach the servers through
 * these ports and are never slowed: the fault is the brokers' network, not Redis's own, and a
 * sentinel that saw its master late would fail it over.
 */
export class LocalProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #target: number;
  #latencyMs = 0;
  port = 0;

  private constructor(server: Server, target: number) {
    this.#server = server;
    this.#target = target;
  }

  /** A proxy to `127.0.0.1:target` (0: set later with `retarget`), on `port` (0: any free one). */
  static async start(target = 0, port = 0): Promise<LocalProxy> {
    const server = createServer({ noDelay: true });
    const proxy = new LocalProxy(server, target);
    server.on('connection', (socket) => proxy.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    proxy.port = (server.address() as { port: number }).port;
    return proxy;
  }

  /** Where new connections go from now on. */
  retarget(port: number): void {
    this.#target = port;
  }

  get target(): number {
    return this.#target;
  }

  /** Each way, on the brokers' connections: new chunks wait this long (order kept). */
  setLatency(ms: number): void {
    this.#latencyMs = ms;
  }

  get latencyMs(): number {
    return this.#latencyMs;
  }

  #accept(client: Socket): void {
    const upstream = connect({ host: '127.0.0.1', port: this.#target, noDelay: true });
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.once('data', (first: Buffer) => {
      const slowed = /^\*\d+\r\n\$5\r\nHELLO/i.test(first.subarray(0, 32).toString('latin1'));
      const toUpstream = this.#pipe(upstream, slowed);
      const toClient = this.#pipe(client, slowed);
      toUpstream(first);
      client.on('data', toUpstream);
      upstream.on('data', toClient);
    });
  }

  /** A writer to `to` that holds each chunk for the latency of the moment, in order. */
  #pipe(to: Socket, slowed: boolean): (chunk: Buffer) => void {
    const queue: { due: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    let lastDue = 0;
    const flush = (): void => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.due <= now) to.write(queue.shift()!.chunk);
      if (queue.length > 0) timer = setTimeout(flush, queue[0]!.due - now);
    };
    return (chunk) => {
      const latency = slowed ? this.#latencyMs : 0;
      if (latency === 0 && queue.length === 0) {
        to.write(chunk);
        return;
      }
      lastDue = Math.max(performance.now() + latency, lastDue);
      queue.push({ due: lastDue, chunk });
      timer ??= setTimeout(flush, Math.max(0, lastDue - performance.now()));
    };
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------- the thread's messages

export type ProxyRequest =
  | { id: number; op: 'open'; target: number; port: number }
  | { id: number; op: 'retarget'; handle: number; target: number }
  | { id: number; op: 'latency'; handle: number; ms: number }
  | { id: number; op: 'close'; handle: number };
export interface ProxyReply {
  id: number;
  handle?: number;
  port?: number;
  error?: string;
}

if (parentPort) {
  const port = parentPort;
  const proxies = new Map<number, LocalProxy>();
  let next = 0;
  port.on('message', async (request: ProxyRequest) => {
    const reply: ProxyReply = { id: request.id };
    try {
      switch (request.op) {
        case 'open': {
          const proxy = await LocalProxy.start(request.target, request.port);
          reply.handle = next++;
          reply.port = proxy.port;
          proxies.set(reply.handle, proxy);
          break;
        }
        case 'retarget':
          proxies.get(request.handle)?.retarget(request.target);
          break;
        case 'latency':
          proxies.get(request.handle)?.setLatency(request.ms);
          break;
        case 'close':
          await proxies.get(request.handle)?.close();
          proxies.delete(request.handle);
          break;
      }
    } catch (error) {
      reply.error = String(error);
    }
    port.postMessage(reply);
  });
}
