import { sessionRef } from '../../server/src/ops/events.ts';
import { Client } from '../support/client.ts';
import { sidOf } from '../support/inspect.ts';
import type { CallRecord, FlowRecord, License, SessionRecord, SignOutRecord } from './history.ts';
import type { Adopted } from './prefill.ts';
import type { Random } from './random.ts';
import {
  authorize,
  LICENSES,
  sendCall,
  sendRemoval,
  sendSignOut,
  type Connection,
  type Sender,
  type Session,
  type UserWorld,
} from './user-requests.ts';

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
  readonly #sender: Sender;
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
    this.#sender = { user: index, client: this.client, world };
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
    const record = await sendCall(
      this.#sender,
      session,
      connection,
      via,
      path,
      below,
      options.afterSignOut,
    );
    if (options.afterSignOut === undefined) this.#learn(session, connection, record);
    return record;
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
    await authorize(this.#sender, flow, session?.token, (token, id) =>
      this.#connected(flow, license, token, id),
    );
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
    const record = await sendRemoval(this.#sender, session, connection, via);
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
    const record = await sendSignOut(this.#sender, session, via);
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
