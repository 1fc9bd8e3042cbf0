import { format1Keys, keys } from '@baton/server';
import { createClient } from 'redis';
import { documentedKeysHere, kindOf } from './key-kinds.ts';

/** A session id as the broker makes them (43 base64url characters). */
const SID = 'S'.repeat(21) + '0'.repeat(22);

const ID = 'i'.repeat(22);

/** Arguments for each of `makers`' key makers (none for a fixed name or a prefix). */
type Samples<Makers> = {
  [entry in keyof Makers]: Makers[entry] extends (...args: infer A) => string ? A : [];
};

/**
 * Arguments for each of `keys.ts`'s key makers: typed by `keys`, so a key added there without a
 * line here does not compile.
 */
const SAMPLES: Samples<typeof keys> = {
  session: [SID],
  connectionIds: [SID],
  connection: [SID, ID],
  refreshLock: [SID, ID],
  backoff: [SID, ID],
  outbox: [SID],
  outboxLease: [SID],
  outboxAttempts: [SID],
  outboxDeadLetters: [SID],
  eventsDue: [7],
  eventsBacklog: [7],
  deadLetters: [7],
  handoff: [ID],
  stateClaim: [ID],
  connectionIndex: ['connected', 7],
  licenceIndex: [7],
  dataFormat: [],
  dataFormatUpgrade: [],
  metricsReporter: [],
  refreshOutcomes: ['refreshed', 29_000_000],
  adminOutbox: [],
  adminJob: ['reencrypt'],
  adminJobLease: ['reencrypt'],
  adminCensus: [],
  rateLimitPrefix: [],
  authSessionPrefix: [],
};

/** The same for data format 1's keys (store/format1/keys.ts), which the upgrade still reads. */
const FORMAT1_SAMPLES: Samples<typeof format1Keys> = {
  connectionIndex: ['connected'],
  eventsDue: [],
  deadLetters: [],
};

/** One name of each key `makers` makes, with `samples`' arguments. */
function namesOf(
  makers: Record<string, unknown>,
  samples: Record<string, unknown[]>,
): { entry: string; name: string }[] {
  return Object.entries(makers).map(([entry, make]) => {
    const args = samples[entry] ?? [];
    const name =
      typeof make === 'string' ? make : (make as (...args: unknown[]) => string)(...args);
    // A prefix completed as its library does: express-rate-limit's limiter and client address,
    // express-session's id.
    const completion = entry === 'rateLimitPrefix' ? 'auth:2001:db8:1200::/56' : ID;
    return { entry, name: name.endsWith(':') ? `${name}${completion}` : name };
  });
}

/** One name of each key `keys.ts` can write, and of format 1's that the upgrade reads. */
export function keysTsNames(): { entry: string; name: string }[] {
  return [...namesOf(keys, SAMPLES), ...namesOf(format1Keys, FORMAT1_SAMPLES)];
}

/** Whether docs/architecture.md's "Storage keys" documents key `name`. */
export function documented(name: string, patterns = documentedKeysHere()): boolean {
  return patterns.some((pattern) => pattern.test(name));
}

/**
 * The kinds of key a Redis holds (key-kinds.ts's `kindOf`), and what of it the storage keys list
 * does not document or has no TTL (the list says every key has one): one line per kind, with how
 * many keys.
 */
export async function surveyStorage(
  url: string,
): Promise<{ kinds: Set<string>; problems: string[] }> {
  const client = createClient({ url });
  await client.connect();
  try {
    const patterns = documentedKeysHere();
    const kinds = new Set<string>();
    const problems = new Map<string, number>();
    for await (const batch of client.scanIterator({ COUNT: 500 }))
      for (const key of batch) {
        kinds.add(kindOf(key));
        const problem = !documented(key, patterns)
          ? 'not documented'
          : (await client.pTTL(key)) === -1
            ? 'without a TTL'
            : undefined;
        if (problem === undefined) continue;
        const line = `${kindOf(key)}: ${problem}`;
        problems.set(line, (problems.get(line) ?? 0) + 1);
      }
    return { kinds, problems: [...problems].map(([line, count]) => `${line} (${count})`) };
  } finally {
    await client.close();
  }
}
