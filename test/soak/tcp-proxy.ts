import { Worker } from 'node:worker_threads';
import type { ProxyReply, ProxyRequest } from './tcp-proxy-thread.ts';

const THREAD = new URL('./tcp-proxy-thread.ts', import.meta.url);

/**
 * A TCP proxy on loopback in front of one Redis server, which the soak slows down: the brokers
 * reach Redis only through these (the servers announce the proxies' ports, see sentinel-set.ts
 * and cluster-set.ts).
 *
 * Latency applies to the brokers' connections only, each way: a connection whose first command is
 * `HELLO` (node-redis speaks RESP3, so every broker connection starts with one). Sentinels
 * (`PING`, `CLIENT SETNAME`...) and replicas (`PING`, `REPLCONF`...) also reach the servers through
 * these ports and are never slowed: the fault is the brokers' network, not Redis's own, and a
 * sentinel that saw its master late would fail it over.
 *
 * Every proxy runs in one thread of its own (tcp-proxy-thread.ts): the soak's own work (users,
 * the provider, its records) must not stall the brokers' Redis, or its pauses would pass for
 * Redis's. This is the handle the soak holds.
 */
export class TcpProxy {
  readonly port: number;
  readonly #handle: number;
  #target: number;
  #latencyMs = 0;

  private constructor(handle: number, port: number, target: number) {
    this.#handle = handle;
    this.port = port;
    this.#target = target;
  }

  /** A proxy to `127.0.0.1:target` (0: set later with `retarget`), on `port` (0: any free one). */
  static async start(target = 0, port = 0): Promise<TcpProxy> {
    const reply = await thread.ask({ op: 'open', target, port });
    return new TcpProxy(reply.handle!, reply.port!, target);
  }

  /** Where new connections go from now on. */
  retarget(port: number): void {
    this.#target = port;
    thread.tell({ op: 'retarget', handle: this.#handle, target: port });
  }

  get target(): number {
    return this.#target;
  }

  /** Each way, on the brokers' connections: new chunks wait this long (order kept). */
  setLatency(ms: number): void {
    this.#latencyMs = ms;
    thread.tell({ op: 'latency', handle: this.#handle, ms });
  }

  get latencyMs(): number {
    return this.#latencyMs;
  }

  async close(): Promise<void> {
    await thread.ask({ op: 'close', handle: this.#handle });
    await thread.release();
  }
}

type Request = ProxyRequest extends infer R
  ? R extends { id: number }
    ? Omit<R, 'id'>
    : never
  : never;

/** The one proxies' thread, started with the first proxy and ended with the last. */
const thread = new (class {
  #worker: Worker | undefined;
  #next = 0;
  #open = 0;
  readonly #waiting = new Map<number, (reply: ProxyReply) => void>();

  #send(request: Request): number {
    if (!this.#worker) {
      const worker = new Worker(THREAD);
      worker.on('message', (reply: ProxyReply) => {
        this.#waiting.get(reply.id)?.(reply);
        this.#waiting.delete(reply.id);
      });
      this.#worker = worker;
    }
    const id = this.#next++;
    this.#worker.postMessage({ ...request, id });
    return id;
  }

  tell(request: Request): void {
    this.#send(request);
  }

  async ask(request: Request): Promise<ProxyReply> {
    if (request.op === 'open') this.#open++;
    const reply = await new Promise<ProxyReply>((resolve) =>
      this.#waiting.set(this.#send(request), resolve),
    );
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply;
  }

  /** One proxy fewer; the thread ends with the last. */
  async release(): Promise<void> {
    if (--this.#open > 0 || !this.#worker) return;
    const worker = this.#worker;
    this.#worker = undefined;
    await worker.terminate();
  }
})();
