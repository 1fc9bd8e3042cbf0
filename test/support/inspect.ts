import { createHash } from 'node:crypto';
import { createClient } from 'redis';

/** What the broker keeps, by kind: the keys in Redis. */
export interface Stored {
  handoffs: Set<string>;
  connections: Set<string>;
  sessions: Set<string>;
  authSessions: Set<string>;
}

/** The session id the broker keys a bearer session token by. */
export const sidOf = (sessionToken: string): string =>
  createHash('sha256').update(sessionToken).digest('base64url');

const clientOf = (url: string) => createClient({ url });
type Client = ReturnType<typeof clientOf>;

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = clientOf(url);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

async function keysLike(client: Client, match: string): Promise<Set<string>> {
  const found = new Set<string>();
  for await (const batch of client.scanIterator({ MATCH: match, COUNT: 1000 })) {
    for (const key of batch) found.add(key);
  }
  return found;
}

export function stored(url: string): Promise<Stored> {
  return withClient(url, async (client) => ({
    handoffs: await keysLike(client, 'baton:{handoff:*'),
    connections: await keysLike(client, 'baton:{*}:connection:*'),
    sessions: await keysLike(client, 'baton:{*}:session'),
    authSessions: await keysLike(client, 'baton:authsession:*'),
  }));
}

/** Keys of `kinds` present in `after` and not in `before`. */
export function added(
  before: Stored,
  after: Stored,
  kinds: (keyof Stored)[] = ['handoffs', 'connections', 'sessions'],
): string[] {
  return kinds.flatMap((kind) => [...after[kind]].filter((key) => !before[kind].has(key)));
}

/** The stored (sealed) connection record: its version and the key id it is sealed under. */
export function storedConnection(
  url: string,
  session: { token: string; id: string },
): Promise<{ version: number; kid: string } | null> {
  return withClient(url, async (client) => {
    // One string, `<version>:<sealed value>` (data format 2).
    const raw = await client.get(`baton:{${sidOf(session.token)}}:connection:${session.id}`);
    const colon = raw?.indexOf(':') ?? -1;
    if (raw === null || colon <= 0) return null;
    const blob = raw.slice(colon + 1);
    return { version: Number(raw.slice(0, colon)), kid: blob.split('.')[0] ?? '' };
  });
}

/** The refresh lock of a connection, when one is held. */
export function refreshLock(
  url: string,
  session: { token: string; id: string },
): Promise<string | null> {
  return withClient(url, (client) =>
    client.get(`baton:{${sidOf(session.token)}}:lock:${session.id}`),
  );
}
