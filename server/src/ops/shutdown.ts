import type { Server, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isStoreDown } from '../store/errors.ts';

export interface ShutdownDeps {
  server: Server;
  /** Readiness: /readyz answers 503 from the first step on. */
  setReady(ready: boolean): void;
  /** Resolves once the refreshes in flight have finished. */
  idle(): Promise<void>;
  /** Closed in order once requests have drained (the outbound dispatcher, then the store). */
  close: (() => Promise<void>)[];
  log: Logger;
  /** Keep serving, not ready, this long first: a load balancer notices and stops sending. */
  delayMs: number;
  /** Bound on draining requests and refreshes; what is left then is cut off. */
  timeoutMs: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Graceful shutdown: not ready at once; after `delayMs` stop accepting connections; let the
 * requests and refreshes in flight finish (for at most `timeoutMs`); then close the dispatcher and
 * the store, Redis last, so that a refresh in flight can still save the pair it got. Runs once.
 */
export function createShutdown(deps: ShutdownDeps): (signal: string) => Promise<void> {
  const sleep =
    deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref()));
  const { server, log } = deps;
  let running: Promise<void> | undefined;
  let draining = false;
  // Responses in flight: once draining, each says Connection: close, and its socket is closed as
  // soon as it goes idle, instead of lingering for the keep-alive timeout.
  const open = new InFlight();
  server.on('request', (_req, res: ServerResponse) => {
    const slot = open.add(res);
    // `on`: 'close' comes once, and `once` would wrap the listener in two more objects per call.
    res.on('close', () => {
      open.delete(slot);
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });

  async function shutdown(signal: string): Promise<void> {
    deps.setReady(false);
    log.info({ signal, delayMs: deps.delayMs }, 'shutting down: not ready');
    log.flush();
    if (deps.delayMs > 0) await sleep(deps.delayMs);

    log.info({ timeoutMs: deps.timeoutMs }, 'shutting down: draining requests and refreshes');
    log.flush();
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close');
    server.closeIdleConnections();
    const drained = Promise.all([closed, deps.idle()]).then(() => 'drained' as const);
    const outcome = await Promise.race([
      drained,
      sleep(deps.timeoutMs).then(() => 'timeout' as const),
    ]);
    if (outcome === 'timeout') {
      log.warn(
        { timeoutMs: deps.timeoutMs },
        'shutting down: cutting off what did not finish in time',
      );
      server.closeAllConnections();
    }
    for (const close of deps.close) {
      try {
        await close();
      } catch (error) {
        log.warn({ err: error }, 'shutting down: a close failed');
      }
    }
    log.info('stopped');
  }

  return (signal) => (running ??= shutdown(signal));
}

/** A start-up cut short by a signal (createStartUp): main.ts closes what it opened and exits 0. */
export class StartUpStopped extends Error {
  override name = 'StartUpStopped';
  readonly signal: string;
  constructor(signal: string) {
    super(`start-up stopped by ${signal}`);
    this.signal = signal;
  }
}

/** The first wait for a store that is down at start-up, doubled each time up to the last. */
const STORE_WAIT_FIRST_MS = 250;
const STORE_WAIT_MAX_MS = 5_000;

/**
 * Start-up as stages a signal can stop: `stop(signal)` aborts `signal`; the stages `check()`
 * between them, and a long one within (the data format upgrade, between batches), throwing
 * StartUpStopped; a wait with nothing to let go of (connecting to Redis) is a `step`, cut short at
 * once. Each stage registers what it opened (`opened`), and `unwind` closes it, last first, going
 * on past a close that fails. The first signal is the one named.
 */
export function createStartUp(
  options: {
    /** How a wait for the store is done (tests: no real time). Rejects when `signal` aborts. */
    wait?: (ms: number, signal: AbortSignal) => Promise<unknown>;
  } = {},
) {
  const controller = new AbortController();
  const opened: (() => unknown)[] = [];
  const wait =
    options.wait ?? ((ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }));
  return {
    signal: controller.signal,
    stop(signal: string): void {
      if (!controller.signal.aborted) controller.abort(new StartUpStopped(signal));
    },
    check(): void {
      controller.signal.throwIfAborted();
    },
    /** `work`'s answer, or StartUpStopped at once if a signal comes first (its closer stops it). */
    step<T>(work: Promise<T>): Promise<T> {
      const { signal } = controller;
      return new Promise<T>((resolve, reject) => {
        const stopped = (): void => reject(signal.reason as Error);
        if (signal.aborted) return stopped();
        signal.addEventListener('abort', stopped, { once: true });
        work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stopped));
      });
    },
    /**
     * `work`'s answer, asked again after a wait (250 ms, doubling to 5 s) while it fails because
     * the store is down: Redis loading its dataset after a restart, a failover under way. A broker
     * started then waits, not listening, instead of exiting into a restart loop; `waiting` hears of
     * each wait. Any other error is thrown; a signal ends the wait at once (StartUpStopped).
     */
    async whileStoreDown<T>(
      work: () => Promise<T>,
      waiting: (error: unknown, ms: number) => void,
    ): Promise<T> {
      for (let attempt = 0; ; attempt++) {
        try {
          return await work();
        } catch (error) {
          if (!isStoreDown(error)) throw error;
          controller.signal.throwIfAborted();
          const ms = Math.min(STORE_WAIT_FIRST_MS * 2 ** attempt, STORE_WAIT_MAX_MS);
          waiting(error, ms);
          await wait(ms, controller.signal).catch(() => controller.signal.throwIfAborted());
        }
      }
    },
    opened(close: () => unknown): void {
      opened.push(close);
    },
    async unwind(onError: (error: unknown) => void): Promise<void> {
      for (const close of opened.reverse()) {
        try {
          await close();
        } catch (error) {
          onError(error);
        }
      }
    },
  };
}
export type StartUp = ReturnType<typeof createStartUp>;

/**
 * The responses in flight, in slots that are reused as they free up. Not a Set: a Set that gains
 * and loses an entry per request moves to a new hash table every few dozen requests, and V8 keeps
 * each old table pointing at the next. Once one table is in the old generation (a full collection
 * promotes whatever is live), every newer one, with the responses it held, is kept through the
 * young collections by its dead predecessor: every request was promoted, and scavenges took
 * 10-20 ms (docs/performance.md, "What kept calls alive").
 */
class InFlight {
  readonly #slots: (ServerResponse | undefined)[] = [];
  readonly #free: number[] = [];

  add(res: ServerResponse): number {
    const slot = this.#free.pop() ?? this.#slots.length;
    this.#slots[slot] = res;
    return slot;
  }

  delete(slot: number): void {
    this.#slots[slot] = undefined;
    this.#free.push(slot);
  }

  *[Symbol.iterator](): Generator<ServerResponse> {
    for (const res of this.#slots) if (res) yield res;
  }
}
