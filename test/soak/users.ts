import { BROKER_ERROR_HEADER, routes, sessionCreateResponseSchema } from '@baton/shared';
import { sessionRef } from '../../server/src/ops/events.ts';
import { Client, redeemAt, startAuth, type Endpoint } from '../support/client.ts';
import { sidOf } from '../support/inspect.ts';
import { consentThroughPages } from '../support/sandbox-pages.ts';
import type {
  CallRecord,
  FlowRecord,
  History,
  License,
  RemovalRecord,
  SessionRecord,
  SignOutRecord,
} from './history.ts';
import type { Adopted } from './prefill.ts';
import type { Random } from './random.ts';

/** The sandbox's licenses and their owners (test/sandbox/src/accounts.ts). */
export const LICENSES: readonly License[] = ['lic-1001', 'lic-1002', 'lic-2001'];
const OWNER: Record<License, string> = {
  'lic-1001': 'lotte.vermeulen@example.be',
  'lic-1002': 'lotte.vermeulen@example.be',
  'lic-2001': 'elodie.lambert@example.be',
};

/** Longer than anything the brokers may take (a paused instance answers when it wakes). */
const REQUEST_TIMEOUT_MS = 20_000;

export interface UserWorld {
  endpoint: Endpoint;
  instances: number;
  now: () => number;
  history: History;
  /** The chain (grant) of an access token the tap saw issued. */
  chainOf: (accessToken: string) => string | undefined;
  /** The provider revokes this grant (the tap). */
  revoke: (chain: string) => void;
}

interface Connection {
  id: string;
  license: License;
  /** The grant it holds now: the code of its last authorization. */
  chain: string | undefined;
  /** A call said `reauthorization_required`, or the provider revoked its grant. */
  needsAuthorization: boolean;
}

interface Session {
  record: SessionRecord;
  token: string;
  connections: Map<License, Connection>;
  /** Every connection id the broker ever answered for this session. */
  known: Set<string>;
}

/** How often each thing a user does is chosen, when it can be. */
const WEIGHTS = {
  call: 60,
  burst: 8,
  connect: 6,
  reauthorize: 3,
  remove: 3,
  signOut: 2,
  revoke: 2,
} as const;
type Action = keyof typeof WEIGHTS;

/**
 * A simulated user: the extension's owner, through the real HTTP flow. Signs in (connects a
 * license, making a session), connects up to three licenses, calls the license APIs through
 * random instances (one at a time, or a burst through all three at once), authorizes a license
 * again, disconnects one, signs out and starts over, and now and then has the provider revoke
 * one of its grants. A connection the broker says needs authorization is authorized again. Every
 * request goes into the history with what came back.
 */
export class SimUser {
  readonly index: number;
  readonly client: Client;
  readonly #random: Random;
  readonly #world: UserWorld;
  #session: Session | undefined;
  #sessions = 0;
  #calls = 0;
  #stopping = false;
  /** Zombie calls (an old token after its sign-out) still to come back. */
  readonly #zombies: Promise<void>[] = [];

  constructor(index: number, random: Random, world: UserWorld) {
    this.index = index;
    this.#random = random;
    this.#world = world;
    this.client = new Client(world.endpoint, { connections: 8 });
  }

  get session(): Session | undefined {
    return this.#session;
  }

  /** Starts from a prefilled session (prefill.ts) instead of signing in. */
  adopt(adopted: Adopted): void {
    const at = this.#world.now();
    const session = this.#newSession(adopted.token, at);
    session.connections.set(adopted.license, {
      id: adopted.connectionId,
      license: adopted.license,
      chain: adopted.code,
      needsAuthorization: false,
    });
    session.known.add(adopted.connectionId);
    this.#world.history.flows.push({
      user: this.index,
      session: session.record.label,
      license: adopted.license,
      start: at,
      end: at,
      via: [-1, -1, -1],
      code: adopted.code,
      connection: adopted.connectionId,
      outcome: 'prefilled',
      joined: false,
    });
  }

  /**
   * Every route once, in order (a sign-in, both kinds of call, a second license, a removal, a
   * sign-out): what loads the brokers' scripts into Redis before its baseline is taken.
   */
  async warmUp(): Promise<void> {
    await this.#connect('lic-1001');
    await this.#connect('lic-2001');
    const session = this.#session;
    if (!session) throw new Error('the warm-up could not sign in');
    for (const connection of session.connections.values())
      for (let via = 0; via < this.#world.instances; via++) {
        await this.call(session, connection, via, { path: 'users.me' });
        await this.call(session, connection, via, { path: 'echo' });
      }
    await this.#connect('lic-1001');
    const second = session.connections.get('lic-2001');
    if (second) await this.#remove(session, second);
    await this.signOut(0, { zombie: false });
  }

  /** Acts until `stop()`, each action after a think time of 100 to 600 ms. */
  async run(): Promise<void> {
    while (!this.#stopping) {
      await this.#act();
      await sleep(this.#random.between(100, 600));
    }
    await Promise.all(this.#zombies);
  }

  stop(): void {
    this.#stopping = true;
  }

  async #act(): Promise<void> {
    const session = this.#session;
    if (!session) {
      await this.#connect(this.#random.pick(LICENSES));
      return;
    }
    const stale = [...session.connections.values()].find((c) => c.needsAuthorization);
    if (stale && this.#random.chance(0.7)) {
      await this.#connect(stale.license);
      return;
    }
    const connections = [...session.connections.values()];
    const free = LICENSES.filter((license) => !session.connections.has(license));
    const possible: Action[] = (Object.keys(WEIGHTS) as Action[]).filter((action) => {
      if (action === 'connect') return free.length > 0;
      if (action === 'signOut') return true;
      return connections.length > 0;
    });
    if (possible.length === 0) return;
    const total = possible.reduce((sum, action) => sum + WEIGHTS[action], 0);
    let pick = this.#random.next() * total;
    const action = possible.find((candidate) => (pick -= WEIGHTS[candidate]) < 0) ?? 'call';
    switch (action) {
      case 'call':
        await this.call(session, this.#random.pick(connections), this.#instance());
        return;
      case 'burst': {
        const connection = this.#random.pick(connections);
        await Promise.all(
          Array.from({ length: this.#world.instances }, (_, via) =>
            this.call(session, connection, via),
          ),
        );
        return;
      }
      case 'connect':
        await this.#connect(this.#random.pick(free));
        return;
      case 'reauthorize':
        await this.#connect(this.#random.pick(connections).license);
        return;
      case 'remove':
        await this.#remove(session, this.#random.pick(connections));
        return;
      case 'signOut':
        await this.signOut(this.#instance());
        return;
      case 'revoke': {
        const connection = this.#random.pick(connections);
        if (connection.chain === undefined) return;
        this.#world.revoke(connection.chain);
        this.#world.history.revocations.push({
          at: this.#world.now(),
          by: 'tap',
          chain: connection.chain,
        });
        return;
      }
    }
  }

  #instance(): number {
    return this.#random.int(this.#world.instances);
  }

  /** A proxied call (users.me or echo) on `connection` through instance `via`. */
  async call(
    session: Session,
    connection: Connection,
    via: number,
    options: { afterSignOut?: number; path?: CallRecord['path'] } = {},
  ): Promise<CallRecord> {
    const path = options.path ?? (this.#random.chance(0.5) ? 'users.me' : 'echo');
    const below = path === 'users.me' ? 'users.me' : `echo/soak/${this.index}/${this.#calls++}`;
    const record: CallRecord = {
      user: this.index,
      session: session.record.label,
      connection: connection.id,
      license: connection.license,
      instance: via,
      path,
      start: this.#world.now(),
      end: 0,
      status: 0,
      ...(options.afterSignOut === undefined ? {} : { afterSignOut: options.afterSignOut }),
    };
    try {
      const response = await this.client.fetch(routes.proxy(connection.id, below), {
        via,
        headers: { authorization: `Bearer ${session.token}` },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      const text = await response.text();
      record.status = response.status;
      const error = response.headers.get(BROKER_ERROR_HEADER);
      if (error !== null) record.error = error;
      const retryAfter = response.headers.get('retry-after');
      if (retryAfter !== null) record.retryAfter = retryAfter;
      if (response.status === 200) this.#whose(record, text);
    } catch {
      record.status = 0;
    }
    record.end = this.#world.now();
    this.#world.history.calls.push(record);
    if (options.afterSignOut === undefined) this.#learn(session, connection, record);
    return record;
  }

  /** Whose data came back: users.me's license and account, or echo's access token's grant. */
  #whose(record: CallRecord, text: string): void {
    try {
      const body = JSON.parse(text) as {
        email?: string;
        license?: { id?: string };
        headers?: { authorization?: string };
      };
      if (record.path === 'users.me') {
        if (body.license?.id !== undefined) record.gotLicense = body.license.id;
        if (body.email !== undefined) record.gotEmail = body.email;
      } else {
        const token = /^Bearer (\S+)$/.exec(body.headers?.authorization ?? '')?.[1];
        record.gotChain = (token && this.#world.chainOf(token)) || null;
      }
    } catch {
      record.gotChain = null;
    }
  }

  /** What an answer tells the user about its connection and session. */
  #learn(session: Session, connection: Connection, record: CallRecord): void {
    if (record.error === 'reauthorization_required') connection.needsAuthorization = true;
    if (record.error === 'not_found') session.connections.delete(connection.license);
    if (record.error === 'invalid_session' && this.#session === session) {
      session.record.lost = record.end;
      this.#session = undefined;
    }
  }

  /**
   * An authorization of `license`: a new session when the user has none, else joining its own
   * (which creates the connection, or authorizes the license's connection again).
   */
  async #connect(license: License): Promise<void> {
    const session = this.#session;
    const via: [number, number, number] = [this.#instance(), this.#instance(), this.#instance()];
    const flow: FlowRecord = {
      user: this.index,
      session: session?.record.label ?? '',
      license,
      start: this.#world.now(),
      end: 0,
      via,
      outcome: 'failed',
      joined: session !== undefined,
    };
    this.#world.history.flows.push(flow);
    const fail = async (step: string, response?: Response) => {
      flow.step = step;
      // POST /session may have stored the connection before it failed (a later step's Redis
      // command went unanswered): its outcome is not known.
      if (step === 'POST /session' && (response === undefined || response.status >= 500))
        flow.outcome = 'unknown';
      if (response) {
        flow.status = response.status;
        const error = response.headers.get(BROKER_ERROR_HEADER);
        if (error !== null) flow.error = error;
        await response.body?.cancel();
      }
      flow.end = this.#world.now();
    };
    let step = '/auth/start';
    try {
      const started = await startAuth(this.client, via[0]);
      step = 'provider pages';
      const callback = await consentThroughPages(started.authorizeUrl, {
        email: OWNER[license],
        licenseId: license,
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      const code = callback.searchParams.get('code');
      if (code !== null) flow.code = code;
      step = '/auth/callback';
      const { final, response } = await this.client.navigate(callback, via[1]);
      const handoff = final.searchParams.get('handoff');
      if (handoff === null) return await fail(step, response);
      step = 'POST /session';
      const answer = await redeemAt(this.client, via[2], handoff, started.verifier, session?.token);
      if (answer.status !== 201) return await fail(step, answer);
      const body = sessionCreateResponseSchema.parse(await answer.json());
      this.#connected(flow, license, body.session_token, body.connection.id);
    } catch {
      // No answer at this step: POST /session's outcome is not known (it may have connected).
      await fail(step);
    }
  }

  #connected(flow: FlowRecord, license: License, token: string, id: string): void {
    flow.end = this.#world.now();
    flow.connection = id;
    let session = this.#session;
    if (!session || session.token !== token) {
      if (session) {
        // The token it joined with named no session any more: the broker made a new one.
        flow.sessionReplaced = session.record.label;
        session.record.lost ??= flow.end;
      }
      session = this.#newSession(token, flow.start);
    }
    flow.session = session.record.label;
    // The broker reconnects a license already in the session (it keeps its id), else creates one.
    flow.outcome = session.known.has(id) ? 'reconnected' : 'created';
    session.known.add(id);
    session.connections.set(license, {
      id,
      license,
      chain: flow.code,
      needsAuthorization: false,
    });
  }

  #newSession(token: string, at: number): Session {
    const record: SessionRecord = {
      label: `u${this.index}.${this.#sessions++}`,
      user: this.index,
      ref: sessionRef(sidOf(token)),
      created: at,
    };
    this.#world.history.sessions.push(record);
    const session = {
      record,
      token,
      connections: new Map<License, Connection>(),
      known: new Set<string>(),
    };
    this.#session = session;
    return session;
  }

  async #remove(session: Session, connection: Connection): Promise<void> {
    const via = this.#instance();
    const record: RemovalRecord = {
      user: this.index,
      session: session.record.label,
      connection: connection.id,
      instance: via,
      start: this.#world.now(),
      end: 0,
      status: 0,
    };
    try {
      const response = await this.client.fetch(routes.connection(connection.id), {
        via,
        method: 'DELETE',
        headers: { authorization: `Bearer ${session.token}` },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      await response.body?.cancel();
      record.status = response.status;
      const error = response.headers.get(BROKER_ERROR_HEADER);
      if (error !== null) record.error = error;
    } catch {
      record.status = 0;
    }
    record.end = this.#world.now();
    this.#world.history.removals.push(record);
    // Gone (204), or gone already (404): either way not this session's any more. Otherwise the
    // user keeps it, and may try again.
    if (record.status === 204 || record.error === 'not_found')
      session.connections.delete(connection.license);
  }

  /**
   * DELETE /session through `via`. Once acknowledged, a call with the old token follows some
   * seconds later (a zombie: the token must not work any more); the user then starts over.
   */
  async signOut(
    via: number,
    options: { zombie?: boolean; zombieAfterMs?: number } = {},
  ): Promise<SignOutRecord | undefined> {
    const session = this.#session;
    if (!session) return undefined;
    const record: SignOutRecord = {
      user: this.index,
      session: session.record.label,
      instance: via,
      start: this.#world.now(),
      end: 0,
      status: 0,
      connections: [...session.connections.values()].map((connection) => connection.id),
    };
    session.record.signOutSent ??= record.start;
    try {
      const response = await this.client.fetch(routes.session, {
        via,
        method: 'DELETE',
        headers: { authorization: `Bearer ${session.token}` },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      await response.body?.cancel();
      record.status = response.status;
      const error = response.headers.get(BROKER_ERROR_HEADER);
      if (error !== null) record.error = error;
    } catch {
      record.status = 0;
    }
    record.end = this.#world.now();
    this.#world.history.signOuts.push(record);
    if (record.status !== 204) return record;
    session.record.signedOut = record.end;
    this.#session = undefined;
    const [connection] = session.connections.values();
    if (connection && options.zombie !== false) {
      const delay = options.zombieAfterMs ?? this.#random.between(0, 8000);
      const via = this.#instance();
      this.#zombies.push(
        sleep(delay).then(async () => {
          await this.call(session, connection, via, {
            afterSignOut: this.#world.now() - record.end,
          });
        }),
      );
    }
    return record;
  }

  /** Resolves once every zombie call has come back. */
  async settled(): Promise<void> {
    await Promise.all(this.#zombies);
  }

  /** The connections of the user's current session, for the final probes. */
  connections(): Connection[] {
    return [...(this.#session?.connections.values() ?? [])];
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
