import { createSealer, MissingKeyError, type Keyring } from '../base/crypto.ts';
import { BrokerError } from '../base/errors.ts';
import type { ConnectionRepository } from '../connections/records.ts';
import { keys, parseSessionKey, sessionKeyPatterns } from '../store/keys.ts';
import { createLeases, type Lease } from '../store/lease.ts';
import { bounded, type Redis, type Send } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import type { Actor, ReencryptJob } from './types.ts';

const STATE_KEY = keys.adminJob('reencrypt');
const LEASE_KEY = keys.adminJobLease('reencrypt');
/** The job's state outlives it by a week: long enough to read what it did, or to resume it. */
const STATE_TTL_MS = 7 * 24 * 3600 * 1000;
/** Held by the one instance that runs it, renewed at every batch: a dead holder's runs out. */
const LEASE_MS = 60_000;
/** Keys a SCAN is asked for at a time (a hint to Redis: a batch of the walk). */
const BATCH = 500;

/** The job as stored: what an operator sees, and where the walk is on each master. */
interface Stored extends ReencryptJob {
  /** Each master's SCAN cursor by its address (`done` once walked; the embedded store: a count). */
  cursors: Record<string, string>;
}

/** One step of a walk over the connection keys: keys, and the cursors after them; null: done. */
type Walker = (cursors: Record<string, string>) => Promise<{
  keys: string[];
  cursors: Record<string, string>;
} | null>;

const idle = (activeKeyId: string): Stored => ({
  state: 'idle',
  activeKeyId,
  startedAt: null,
  finishedAt: null,
  startedBy: null,
  seen: 0,
  resealed: 0,
  alreadyCurrent: 0,
  missingKey: {},
  error: null,
  cursors: {},
});

const visible = ({ cursors: _cursors, ...job }: Stored): ReencryptJob => ({
  ...job,
  missingKey: { ...job.missingKey },
});

/** SCAN of each master in turn, from the cursor saved for its address. */
function redisWalker(redis: Redis, size: number): Walker {
  // The masters as this walk found them (a Cluster's addresses; one master: `master`).
  let masters: Promise<[Send[], string[]]> | undefined;
  return async (cursors) => {
    masters ??= Promise.all([
      redis.masters(),
      redis.pingMasters(bounded).then((pinged) => pinged.map(({ address }) => address || 'master')),
    ]);
    const [sends, addresses] = await masters;
    const n = addresses.findIndex((address) => cursors[address] !== 'done');
    const send = sends[n];
    const address = addresses[n];
    if (n < 0 || !send || address === undefined) return null;
    const [next, batch] = (await bounded(
      send([
        'SCAN',
        cursors[address] ?? '0',
        'MATCH',
        sessionKeyPatterns.connection,
        'COUNT',
        String(size),
      ]),
    )) as [string, string[]];
    return {
      keys: batch,
      cursors: { ...cursors, [address]: next === '0' ? 'done' : String(next) },
    };
  };
}

/** The embedded store's keys, `size` at a time from a count of those already walked. */
function memoryWalker(store: Store, size: number): Walker {
  return async (cursors) => {
    const from = Number(cursors.embedded ?? 0);
    if (cursors.embedded === 'done') return null;
    const batch: string[] = [];
    let at = 0;
    for await (const key of store.scan(sessionKeyPatterns.connection)) {
      if (at++ < from) continue;
      if (batch.length === size)
        return { keys: batch, cursors: { embedded: String(from + batch.length) } };
      batch.push(key);
    }
    return { keys: batch, cursors: { embedded: 'done' } };
  };
}

/**
 * Re-encryption under the active key (TOKEN_ENCRYPTION_KEYS' first), as a job: its state in the
 * store (STATE_KEY), walked in batches from a SCAN cursor saved per master after each batch, by one
 * instance at a time (a lease renewed per batch). Started, it runs in the background of the
 * instance that started it; `stop` pauses it between batches (shutdown); a start resumes a paused
 * job, or one whose instance died (its lease ran out), from its cursors. A record is sealed again
 * by reading it (records.ts `load`), as any read would. A walk resumed on another node after a
 * failover may see a record twice or miss one: a record missed stays readable and is sealed again
 * by its next read, or by running the job again.
 */
export function createReencryptJob(deps: {
  store: Store;
  redis: Redis | undefined;
  keyring: Keyring;
  connections: ConnectionRepository;
  now: () => number;
  /** Told after each batch (the CLI prints progress). */
  onBatch?: (job: ReencryptJob) => void;
  /** Keys asked for at a time (default 500). */
  batch?: number;
}) {
  const { store, redis, keyring, connections, now } = deps;
  const sealer = createSealer(keyring);
  const leases = createLeases(store);
  let running: Promise<ReencryptJob> | null = null;
  let stopping = false;

  const read = async (): Promise<Stored> => {
    const raw = await store.get(STATE_KEY);
    return raw === null ? idle(keyring.activeKid) : (JSON.parse(raw) as Stored);
  };
  const save = (job: Stored): Promise<void> =>
    store.set(STATE_KEY, JSON.stringify(job), STATE_TTL_MS);
  const iso = () => new Date(now()).toISOString();

  /** One connection key: sealed again if under another key; counted. */
  async function reseal(job: Stored, key: string): Promise<void> {
    const parsed = parseSessionKey(key);
    if (parsed?.kind !== 'connection') return;
    const stored = await connections.sealed(parsed.sid, parsed.id);
    if (!stored) return;
    job.seen++;
    if (!sealer.isStale(stored.value)) {
      job.alreadyCurrent++;
      return;
    }
    try {
      await connections.load(parsed.sid, parsed.id);
      job.resealed++;
    } catch (error) {
      const kid = stored.value.split('.')[0] ?? '?';
      if (error instanceof MissingKeyError) job.missingKey[kid] = (job.missingKey[kid] ?? 0) + 1;
      // Its session ended meanwhile: the record goes with it, nothing to seal.
      else if (!(error instanceof BrokerError && error.code === 'invalid_session')) throw error;
    }
  }

  async function advance(job: Stored, lease: Lease): Promise<ReencryptJob> {
    const walker = redis
      ? redisWalker(redis, deps.batch ?? BATCH)
      : memoryWalker(store, deps.batch ?? BATCH);
    try {
      for (;;) {
        if (stopping) {
          job.state = 'paused';
          break;
        }
        const step = await walker(job.cursors);
        if (!step) {
          Object.assign(job, { state: 'done', finishedAt: iso() });
          break;
        }
        for (const key of step.keys) await reseal(job, key);
        // Lost (this instance stalled past it): another took the job over from the cursors saved
        // before this batch, and does it again (sealing again is idempotent); this one says nothing.
        if (!(await leases.renew(lease, LEASE_MS))) return visible(job);
        job.cursors = step.cursors;
        await save(job);
        deps.onBatch?.(visible(job));
      }
    } catch (error) {
      Object.assign(job, { state: 'failed', error: (error as Error).name, finishedAt: iso() });
    }
    await save(job).catch(() => undefined);
    await leases.release(lease).catch(() => undefined);
    return visible(job);
  }

  return {
    /** Starts the job, or resumes it; answers at once with its state (the work goes on). */
    async start(actor: Actor): Promise<ReencryptJob> {
      const lease = await leases.take(LEASE_KEY, LEASE_MS);
      // Another instance runs it: as it stands. Else read once holding it, so no other moves it.
      const current = await read();
      if (!lease) return visible(current);
      // Done, never run, or for another active key: a walk from the start.
      const fresh =
        current.state === 'idle' ||
        current.state === 'done' ||
        current.activeKeyId !== keyring.activeKid;
      const job: Stored = fresh
        ? { ...idle(keyring.activeKid), state: 'running', startedAt: iso(), startedBy: actor.name }
        : { ...current, state: 'running', finishedAt: null, error: null };
      await save(job);
      stopping = false;
      running = advance(job, lease).finally(() => {
        running = null;
      });
      return visible(job);
    },

    /** The job as stored; one left running by an instance whose lease ran out shows `paused`. */
    async state(): Promise<ReencryptJob> {
      const job = visible(await read());
      if (job.state === 'running' && !running && !(await leases.held(LEASE_KEY)))
        return { ...job, state: 'paused' };
      return job;
    },

    /** What this instance runs, once it ends; null when it runs nothing. */
    settled(): Promise<ReencryptJob> | null {
      return running;
    },

    /** Pauses the job this instance runs, between two batches (shutdown). */
    async stop(): Promise<void> {
      stopping = true;
      await running;
    },
  };
}
export type ReencryptJobs = ReturnType<typeof createReencryptJob>;
