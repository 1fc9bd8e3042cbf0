import { PROXY_ANSWER_HEADERS } from '@baton/shared';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';

/** A dropped answer's body is read up to this much to keep the connection; beyond, it is cut. */
const DROP_LIMIT = 64 * 1024;

/**
 * What became of one upstream call: its answer's status, and whether the call is over for the
 * client (`relayed`: its answer passed on, or the client gone); false: the answer was dropped and
 * `res` is untouched.
 */
export interface Answer {
  status: number;
  relayed: boolean;
  /** The answer said it was larger than `Bounds.maxBytes`: refused before anything was relayed. */
  tooLarge?: boolean;
}

/** What one exchange may take: bytes relayed, and time from its start to the answer's end. */
export interface Bounds {
  maxBytes: number;
  deadlineMs: number;
}

export const UNBOUNDED: Bounds = { maxBytes: Infinity, deadlineMs: Infinity };

/** The upstream call failed before any of its answer went to the client. */
export class UpstreamError extends Error {}

/**
 * Sends one request upstream and streams its answer into `res` (status, the returned headers,
 * `Cache-Control: no-store`, then the body as it comes, paused while the client is slow), or drops
 * it when `relay(status)` says it is not to be passed on (a 401 worth a refresh, a redirect): then
 * `res` is left untouched. Settles when the answer has ended.
 *
 * Rejects with UpstreamError when the call failed before anything was relayed. When it fails
 * midway (upstream cut, timeout), `res` is destroyed, so the client sees a cut answer, never a
 * short one passed off as whole, and `onCut` is told; when the client goes, the upstream request
 * is aborted. Either way it then resolves.
 *
 * `bounds`: an answer whose Content-Length is over `maxBytes` is refused before anything is
 * relayed (`tooLarge`); one that grows past it while relayed is cut. The whole exchange must end
 * within `deadlineMs` (undici's own timeouts are per wait, so a trickling answer could hold a call
 * open for ever): past it, before the answer's start it rejects, after it the answer is cut.
 *
 * undici's handler interface rather than `request()`: that one wraps each answer in a body stream,
 * a promise and a handler object that undici keeps referring to after the call, and under load
 * (with the stream's listeners reaching the client's response) whole calls then outlived young
 * collections and were promoted to the old generation: long scavenges, the broker's p99
 * (docs/performance.md, "What kept calls alive").
 */
export function exchange(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  res: ServerResponse,
  relay: (status: number) => boolean,
  onCut: (error: Error) => void,
  bounds: Bounds = UNBOUNDED,
): Promise<Answer> {
  // The client went while the call was being prepared: nothing to ask for.
  if (res.destroyed) return Promise.resolve({ status: 0, relayed: true });
  return new Promise((resolve, reject) => {
    const handler = new Exchange(res, relay, onCut, resolve, reject, bounds);
    try {
      dispatcher.dispatch(options, handler);
    } catch (error) {
      handler.onResponseError(null, error as Error);
    }
  });
}

/** One exchange's handler. Once settled it lets go of everything, as undici may keep it. */
class Exchange implements Dispatcher.DispatchHandler {
  #res: ServerResponse | null;
  #relay: ((status: number) => boolean) | null;
  #onCut: (error: Error) => void;
  #resolve: ((answer: Answer) => void) | null;
  #reject: ((error: Error) => void) | null;
  #controller: Dispatcher.DispatchController | null = null;
  #status = 0;
  /** -1 until the answer's start; then 0 (dropping) or 1 (relaying). */
  #mode = -1;
  #dropped = 0;
  #relayed = 0;
  readonly #maxBytes: number;
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    res: ServerResponse,
    relay: (status: number) => boolean,
    onCut: (error: Error) => void,
    resolve: (answer: Answer) => void,
    reject: (error: Error) => void,
    bounds: Bounds,
  ) {
    this.#res = res;
    this.#relay = relay;
    this.#onCut = onCut;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#maxBytes = bounds.maxBytes;
    if (bounds.deadlineMs !== Infinity)
      this.#deadline = setTimeout(this.#expired, bounds.deadlineMs).unref();
    // `on`, not `once`: 'close' comes once, `once` wraps the listener in two more objects per
    // call, and #release takes it off either way.
    res.on('close', this.#clientClosed);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Settled before undici got to it: the client is gone.
    if (!this.#res) controller.abort(new Error('The answer is not wanted any more.'));
    else this.#controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ): void {
    const res = this.#res;
    if (status < 200 || !res) return;
    this.#status = status;
    if (!this.#relay?.(status)) {
      this.#mode = 0;
      return;
    }
    if (Number(headers['content-length'] ?? 0) > this.#maxBytes) {
      this.#mode = 0;
      this.#settle({ status, relayed: false, tooLarge: true }, true);
      return;
    }
    this.#mode = 1;
    res.statusCode = status;
    // Of the answer's headers only these (never Set-Cookie, Location or a hop-by-hop header).
    for (const name of PROXY_ANSWER_HEADERS) {
      const value = headers[name];
      if (value !== undefined) res.setHeader(name, value);
    }
    res.setHeader('Cache-Control', 'no-store');
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.#res;
    if (!res) return;
    if (this.#mode === 1) {
      this.#relayed += chunk.length;
      if (this.#relayed > this.#maxBytes) {
        this.#cut(new Error(`the answer grew past ${this.#maxBytes} bytes`));
        return;
      }
      if (!res.write(chunk)) {
        controller.pause();
        res.once('drain', this.#drained);
      }
      return;
    }
    this.#dropped += chunk.length;
    // Too much to read for nothing: cut the connection instead.
    if (this.#dropped > DROP_LIMIT) this.#settle({ status: this.#status, relayed: false }, true);
  }

  onResponseEnd(): void {
    if (this.#mode === 1) this.#res?.end();
    this.#settle({ status: this.#status, relayed: this.#mode === 1 }, false);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    const res = this.#res;
    if (!res) return;
    if (this.#mode === -1) {
      this.#reject?.(new UpstreamError('The upstream call failed.', { cause: error }));
      this.#release();
    } else if (this.#mode === 1) {
      res.destroy();
      this.#onCut(error);
      this.#settle({ status: this.#status, relayed: true }, false);
    } else {
      this.#settle({ status: this.#status, relayed: false }, false);
    }
  }

  /** The client's answer cut short, and the upstream request with it. */
  #cut(error: Error): void {
    this.#res?.destroy();
    this.#onCut(error);
    this.#settle({ status: this.#status, relayed: true }, true);
  }

  /** The exchange's deadline passed: whatever it was doing is stopped. */
  readonly #expired = (): void => {
    if (!this.#res) return;
    const error = new Error('the upstream call went past its deadline');
    if (this.#mode === 1) this.#cut(error);
    else if (this.#mode === 0) this.#settle({ status: this.#status, relayed: false }, true);
    else {
      const controller = this.#controller;
      this.#reject?.(
        new UpstreamError('The upstream call went past its deadline.', { cause: error }),
      );
      this.#release();
      if (controller && !controller.aborted) controller.abort(error);
    }
  };

  readonly #drained = (): void => {
    this.#controller?.resume();
  };

  readonly #clientClosed = (): void => {
    const res = this.#res;
    if (!res || res.writableFinished) return;
    this.#onCut(new Error('the client closed the connection before the answer ended'));
    this.#settle({ status: this.#status, relayed: true }, true);
  };

  /** Resolve with `answer`; `abort`: the upstream request is cut (its connection closed). */
  #settle(answer: Answer, abort: boolean): void {
    const resolve = this.#resolve;
    const controller = this.#controller;
    this.#release();
    if (abort && controller && !controller.aborted)
      controller.abort(new Error('The answer is not wanted any more.'));
    resolve?.(answer);
  }

  #release(): void {
    clearTimeout(this.#deadline);
    this.#res?.off('close', this.#clientClosed);
    this.#res?.off('drain', this.#drained);
    this.#res = null;
    // The caller's rule may hold the connection's record, access token included.
    this.#relay = null;
    this.#resolve = null;
    this.#reject = null;
    this.#controller = null;
  }
}
