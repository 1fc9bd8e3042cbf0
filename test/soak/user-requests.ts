/**
 * What a simulated user (users.ts) sends the brokers, through the real HTTP flow: a proxied call,
 * an authorization through the sandbox's pages, a removal, a sign-out. Each goes through the
 * instance it is given and into the history with what came back; what an answer means for the
 * user's session is the user's to decide. With the sandbox's licenses, and the user's world and
 * session as these requests read them.
 */
import { BROKER_ERROR_HEADER, routes, sessionCreateResponseSchema } from '@baton/shared';
import { redeemAt, startAuth, type Client, type Endpoint } from '../support/client.ts';
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

export interface Connection {
  id: string;
  license: License;
  /** The grant it holds now: the code of its last authorization. */
  chain: string | undefined;
  /** A call said `reauthorization_required`, or the provider revoked its grant. */
  needsAuthorization: boolean;
}

export interface Session {
  record: SessionRecord;
  token: string;
  connections: Map<License, Connection>;
  /** Every connection id the broker ever answered for this session. */
  known: Set<string>;
}

/** Who sends a request: the user (its index, as the history names it), its client, its world. */
export interface Sender {
  user: number;
  client: Client;
  world: UserWorld;
}

/** A proxied call (users.me or echo, at `below`) on `connection` through instance `via`. */
export async function sendCall(
  from: Sender,
  session: Session,
  connection: Connection,
  via: number,
  path: CallRecord['path'],
  below: string,
  afterSignOut: number | undefined,
): Promise<CallRecord> {
  const record: CallRecord = {
    user: from.user,
    session: session.record.label,
    connection: connection.id,
    license: connection.license,
    instance: via,
    path,
    start: from.world.now(),
    end: 0,
    status: 0,
    ...(afterSignOut === undefined ? {} : { afterSignOut }),
  };
  try {
    const response = await from.client.fetch(routes.proxy(connection.id, below), {
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
    if (response.status === 200) whose(from.world, record, text);
  } catch {
    record.status = 0;
  }
  record.end = from.world.now();
  from.world.history.calls.push(record);
  return record;
}

/** Whose data came back: users.me's license and account, or echo's access token's grant. */
function whose(world: UserWorld, record: CallRecord, text: string): void {
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
      record.gotChain = (token && world.chainOf(token)) || null;
    }
  } catch {
    record.gotChain = null;
  }
}

/**
 * The authorization `flow` records (its license, through its three instances): /auth/start, the
 * provider's pages, /auth/callback, then POST /session, joining the session of `token` if given.
 * On a 201, `connected` is told the session token and the connection id; else the flow says
 * which step failed, and how.
 */
export async function authorize(
  from: Sender,
  flow: FlowRecord,
  token: string | undefined,
  connected: (token: string, id: string) => void,
): Promise<void> {
  const { license, via } = flow;
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
    flow.end = from.world.now();
  };
  let step = '/auth/start';
  try {
    const started = await startAuth(from.client, via[0]);
    step = 'provider pages';
    const callback = await consentThroughPages(started.authorizeUrl, {
      email: OWNER[license],
      licenseId: license,
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    const code = callback.searchParams.get('code');
    if (code !== null) flow.code = code;
    step = '/auth/callback';
    const { final, response } = await from.client.navigate(callback, via[1]);
    const handoff = final.searchParams.get('handoff');
    if (handoff === null) return await fail(step, response);
    step = 'POST /session';
    const answer = await redeemAt(from.client, via[2], handoff, started.verifier, token);
    if (answer.status !== 201) return await fail(step, answer);
    const body = sessionCreateResponseSchema.parse(await answer.json());
    connected(body.session_token, body.connection.id);
  } catch {
    // No answer at this step: POST /session's outcome is not known (it may have connected).
    await fail(step);
  }
}

/** DELETE of `connection` through `via`. */
export async function sendRemoval(
  from: Sender,
  session: Session,
  connection: Connection,
  via: number,
): Promise<RemovalRecord> {
  const record: RemovalRecord = {
    user: from.user,
    session: session.record.label,
    connection: connection.id,
    instance: via,
    start: from.world.now(),
    end: 0,
    status: 0,
  };
  await sendDelete(from, routes.connection(connection.id), session.token, via, record);
  from.world.history.removals.push(record);
  return record;
}

/** DELETE /session of `session` through `via` (the session record notes when it was sent). */
export async function sendSignOut(
  from: Sender,
  session: Session,
  via: number,
): Promise<SignOutRecord> {
  const record: SignOutRecord = {
    user: from.user,
    session: session.record.label,
    instance: via,
    start: from.world.now(),
    end: 0,
    status: 0,
    connections: [...session.connections.values()].map((connection) => connection.id),
  };
  session.record.signOutSent ??= record.start;
  await sendDelete(from, routes.session, session.token, via, record);
  from.world.history.signOuts.push(record);
  return record;
}

/** DELETE `path` with the session's token through `via`; its answer (or none) goes into `record`. */
async function sendDelete(
  from: Sender,
  path: string,
  token: string,
  via: number,
  record: { status: number; error?: string; end: number },
): Promise<void> {
  try {
    const response = await from.client.fetch(path, {
      via,
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    await response.body?.cancel();
    record.status = response.status;
    const error = response.headers.get(BROKER_ERROR_HEADER);
    if (error !== null) record.error = error;
  } catch {
    record.status = 0;
  }
  record.end = from.world.now();
}
