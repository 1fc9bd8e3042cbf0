import {
  Agent,
  createServer,
  request,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { buffer } from 'node:stream/consumers';
import type { ApiRequest, TokenRequest } from './history.ts';
import { socketOwner } from './socket-owner.ts';

/** What an intercept may do at a refresh: kill or pause its broker, say (the nemesis). */
export type TokenStage = 'request' | 'answer';
type Intercept = { stage: TokenStage; act: (request: TokenRequest) => Promise<void> };

export interface TapOptions {
  /** The sandbox's address. */
  target: string;
  /** The soak's clock, ms. */
  now: () => number;
  /**
   * The access tokens' lifetime at this provider, in seconds: token answers say so in
   * `expires_in`, and an API call with a token older than that is answered 401, as the sandbox
   * answers an expired one. The sandbox's own is the specification's hour.
   */
  lifetimeS: number;
  /** The broker processes, for telling which one sent a token request. */
  pids: () => readonly number[];
}

const TOKEN_PATH = /^\/licenses\/([^/]+)\/oauth2\/access_token$/;
const API_PATH = /^\/licenses\/([^/]+)\//;

/**
 * The provider as the soak sees it: an HTTP proxy in front of the sandbox that every broker and
 * browser reaches it through (world.ts's `front`), recording every token request (the code or
 * refresh token presented, the outcome, the pair issued and whether the broker got it) and every
 * API call's access token, by grant. A grant is a chain of pairs from one code: every token the
 * tap sees issued belongs to the chain of the code or refresh token that was presented for it.
 *
 * Two things it does as a provider, because the sandbox cannot: access tokens that live a few
 * seconds (`lifetimeS`), so each connection's refresh token rotates many times a minute, and the
 * revocation of one grant (the sandbox revokes every grant of a license or an account at once).
 * It answers those as the sandbox answers an expired token or a revoked grant.
 */
export class ProviderTap {
  readonly tokens: TokenRequest[] = [];
  readonly api: ApiRequest[] = [];
  /** Each issued token's chain (access and refresh tokens alike). */
  readonly chainOf = new Map<string, string>();
  readonly #issuedAt = new Map<string, number>();
  readonly #revoked = new Set<string>();
  readonly #options: TapOptions;
  readonly #server: Server;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 128 });
  /**
   * Token requests each on a connection of their own: on a kept-alive one the sandbox may close as
   * idle just as a request goes out, that request fails unseen, and would pass for a
   * `drop_after_rotate` (a rotation that never happened).
   */
  readonly #tokenAgent = new Agent({ keepAlive: false });
  readonly #sockets = new Set<Socket>();
  readonly #owners = new WeakMap<Socket, number | undefined>();
  #intercepts: Intercept[] = [];
  #target: URL;
  url = '';

  private constructor(options: TapOptions, server: Server) {
    this.#options = options;
    this.#server = server;
    this.#target = new URL(options.target);
  }

  static async start(options: TapOptions): Promise<ProviderTap> {
    const server = createServer({ keepAliveTimeout: 30_000 });
    const tap = new ProviderTap(options, server);
    server.on('request', (req, res) => tap.#handle(req, res));
    server.on('connection', (socket) => {
      tap.#sockets.add(socket);
      socket.on('close', () => tap.#sockets.delete(socket));
      // Named now, while the process that opened it surely runs: a request may reach the tap
      // after its broker was killed (it was in the socket already).
      tap.#owner(socket);
    });
    server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    tap.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return tap;
  }

  /** The provider revokes this grant (the user revoked the integration for this license). */
  revoke(chain: string): void {
    this.#revoked.add(chain);
  }

  isRevoked(chain: string): boolean {
    return this.#revoked.has(chain);
  }

  /**
   * The next refresh that reaches `stage` (sent by a broker the tap can name) waits for `act`
   * before it goes on: `request` before the sandbox sees it, `answer` once the sandbox has
   * rotated and before the broker gets the answer.
   */
  intercept(stage: TokenStage, act: (request: TokenRequest) => Promise<void>): void {
    this.#intercepts.push({ stage, act });
  }

  /** Drops intercepts that no refresh took. */
  clearIntercepts(): void {
    this.#intercepts = [];
  }

  /** Runs the first intercept waiting at `stage`; true when one acted. */
  async #stage(stage: TokenStage, record: TokenRequest): Promise<boolean> {
    if (record.grant !== 'refresh_token' || record.pid === undefined) return false;
    const found = this.#intercepts.find((intercept) => intercept.stage === stage);
    if (!found) return false;
    this.#intercepts = this.#intercepts.filter((intercept) => intercept !== found);
    await found.act(record);
    return true;
  }

  #owner(socket: Socket): number | undefined {
    if (!this.#owners.has(socket)) {
      const local = (this.#server.address() as AddressInfo).port;
      this.#owners.set(socket, socketOwner(socket.remotePort ?? 0, local, this.#options.pids()));
    }
    return this.#owners.get(socket);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'POST' && TOKEN_PATH.test(path)) void this.#token(req, res);
    else if (API_PATH.test(path)) this.#api(req, res);
    else this.#forward(req, res, () => {});
  }

  // ---------------------------------------------------------------- the token endpoint

  async #token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const gone = watchGone(res);
    const body = await buffer(req);
    const form = new URLSearchParams(body.toString('utf8'));
    const grant = form.get('grant_type') ?? '';
    const presented = (grant === 'auth_code' ? form.get('code') : form.get('refresh_token')) ?? '';
    const record: TokenRequest = {
      seq: this.tokens.length,
      grant,
      presented,
      chain: grant === 'auth_code' ? presented : this.chainOf.get(presented),
      pid: this.#owner(req.socket),
      start: this.#options.now(),
      outcome: 'pending',
    };
    this.tokens.push(record);
    if (record.chain !== undefined && this.#revoked.has(record.chain)) {
      record.outcome = 'revoked';
      record.status = 400;
      record.description = 'The grant was revoked.';
      record.answered = record.start;
      this.#send(res, record, 400, {
        error: 'invalid_grant',
        error_description: 'The grant was revoked.',
      });
      return;
    }
    // A broker killed here closes its connection a moment later: the sandbox never sees the request.
    if (await this.#stage('request', record)) await closedWithin(res, 1000);
    if (gone()) {
      record.outcome = 'abandoned';
      return;
    }
    const upstream = request({
      ...this.#upstreamOptions(req, body.length),
      agent: this.#tokenAgent,
    });
    res.on('close', () => {
      if (record.answered === undefined) {
        record.outcome = 'abandoned';
        upstream.destroy();
      }
    });
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (record.answered !== undefined || record.outcome === 'abandoned') return;
      // The sandbox cut the connection without answering (drop_after_rotate): so does the tap.
      record.outcome = 'dropped';
      record.description = error.code ?? error.message;
      record.answered = this.#options.now();
      res.destroy();
    });
    upstream.on('response', (answer) => void this.#tokenAnswer(answer, record, res, gone));
    upstream.end(body);
  }

  async #tokenAnswer(
    answer: IncomingMessage,
    record: TokenRequest,
    res: ServerResponse,
    gone: () => boolean,
  ): Promise<void> {
    const text = (await buffer(answer)).toString('utf8');
    record.answered = this.#options.now();
    record.status = answer.statusCode ?? 0;
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON: passed on as it came
    }
    if (record.status === 200 && typeof json.access_token === 'string') {
      const issued = { accessToken: json.access_token, refreshToken: String(json.refresh_token) };
      record.issued = issued;
      record.outcome = 'rotated';
      if (record.chain !== undefined) {
        this.chainOf.set(issued.accessToken, record.chain);
        this.chainOf.set(issued.refreshToken, record.chain);
      }
      this.#issuedAt.set(issued.accessToken, record.answered);
      json.expires_in = this.#options.lifetimeS;
    } else {
      record.outcome = record.status === 400 || record.status === 401 ? 'rejected' : 'failed';
      if (typeof json.error_description === 'string') record.description = json.error_description;
    }
    await this.#stage('answer', record);
    if (gone()) {
      record.delivered = false;
      return;
    }
    const headers = { ...answer.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    const out = record.outcome === 'rotated' ? JSON.stringify(json) : text;
    res.writeHead(record.status, { ...headers, 'content-length': Buffer.byteLength(out) });
    res.end(out, () => {
      record.delivered = true;
      record.end = this.#options.now();
    });
    res.on('close', () => (record.delivered ??= false));
  }

  #send(res: ServerResponse, record: TokenRequest, status: number, body: object): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text, () => {
      record.delivered = true;
      record.end = this.#options.now();
    });
  }

  // ---------------------------------------------------------------- the license APIs

  #api(req: IncomingMessage, res: ServerResponse): void {
    const token = /^Bearer +(\S+)/i.exec(req.headers.authorization ?? '')?.[1];
    const chain = token === undefined ? undefined : this.chainOf.get(token);
    const entry: ApiRequest = { at: this.#options.now(), chain, status: 0 };
    this.api.push(entry);
    const issuedAt = token === undefined ? undefined : this.#issuedAt.get(token);
    const refused =
      chain !== undefined && this.#revoked.has(chain)
        ? 'revoked'
        : issuedAt !== undefined && entry.at - issuedAt >= this.#options.lifetimeS * 1000
          ? 'expired'
          : undefined;
    if (refused) {
      entry.refused = refused;
      entry.status = 401;
      req.resume();
      const text = JSON.stringify({
        error: 'invalid_token',
        error_description:
          refused === 'expired' ? 'The access token expired.' : 'The access token was revoked.',
      });
      res.writeHead(401, {
        'content-type': 'application/json; charset=utf-8',
        'www-authenticate': 'Bearer error="invalid_token"',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
      return;
    }
    this.#forward(req, res, (status) => (entry.status = status));
  }

  // ---------------------------------------------------------------- everything else

  #upstreamOptions(req: IncomingMessage, length?: number) {
    const headers = { ...req.headers, host: this.#target.host };
    if (length !== undefined) {
      headers['content-length'] = String(length);
      delete headers['transfer-encoding'];
    }
    return {
      host: this.#target.hostname,
      port: this.#target.port,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers,
      agent: this.#agent,
    };
  }

  #forward(req: IncomingMessage, res: ServerResponse, onStatus: (status: number) => void): void {
    const upstream = request(this.#upstreamOptions(req), (answer) => {
      onStatus(answer.statusCode ?? 0);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#agent.destroy();
    this.#tokenAgent.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Whether the client's connection closed before `res` was written whole. */
function watchGone(res: ServerResponse): () => boolean {
  let gone = false;
  res.once('close', () => (gone = !res.writableFinished));
  return () => gone || res.destroyed;
}

/** Resolves when `res` closes, or after `ms`. */
function closedWithin(res: ServerResponse, ms: number): Promise<void> {
  if (res.destroyed || res.socket?.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    res.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
