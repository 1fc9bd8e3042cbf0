import { keys } from '../store/keys.ts';
import { createLeases, type Lease } from '../store/lease.ts';
import { bounded, type Redis, type Send } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import type { Actor } from './types.ts';

/** A job's state outlives it by a week: long enough to read what it did, or to resume it. */
const STATE_TTL_MS = 7 * 24 * 3600 * 1000;
/** Held by the one instance that runs a job, renewed at every batch: a dead holder's runs out. */
const LEASE_MS = 60_000;
/** Keys a SCAN is asked for at a time (a hint to Redis: a batch of the walk). */
const BATCH = 500;

/** What every job of an operator says of its run (types.ts ReencryptJob, CensusJob). */
export interface JobRun {
  state: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  startedAt: string | null;
  finishedAt: string | null;
  startedBy: string | null;
  error: string | null;
}

/** A job as stored: what an operator sees, and where the walk is on each master. */
type Stored<J> = J & {
  /** Each master's SCAN cursor by its address (`done` once walked; the embedded store: a count). */
  cursors: Record<string, string>;
};

/** One step of a walk over the keys: keys, and the cursors after them; null: done. */
type Walker = (cursors: Record<string, string>) => Promise<{
  keys: string[];
  cursors: Record<string, string>;
} | null>;

/** SCAN of each master in turn, from the cursor saved for its address. */
function redisWalker(redis: Redis, pattern: string, size: number): Walker {
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
      send(['SCAN', cursors[address] ?? '0', 'MATCH', pattern, 'COUNT', String(size)]),
    )) as [string, string[]];
    return {
      keys: batch,
      cursors: { ...cursors, [address]: next === '0' ? 'done' : String(next) },
    };
  };
}

/** The embedded store's keys, `size` at a time from a count of those already walked. */
function memoryWalker(store: Store, pattern: string, size: number): Walker {
  return async (cursors) => {
    const from = Number(cursors.embedded ?? 0);
    if (cursors.embedded === 'done') return null;
    const batch: string[] = [];
    let at = 0;
    for await (const key of store.scan(pattern)) {
      if (at++ < from) continue;
      if (batch.length === size)
        return { keys: batch, cursors: { embedded: String(from + batch.length) } };
      batch.push(key);
    }
    return { keys: batch, cursors: { embedded: 'done' } };
  };
}

/** What an operator sees of a stored job: a copy (a later batch does not change it), no cursors. */
function visible<J extends JobRun>(job: Stored<J>): J {
  const { cursors: _cursors, ...rest } = structuredClone(job);
  return rest as unknown as J;
}

/**
 * An operator's job that walks the keys matching `pattern` (the re-encryption, the census): its
 * state in the store (keys.adminJob(name)), walked in batches from a SCAN cursor saved per master
 * after each batch, by one instance at a time (a lease renewed per batch). Started, it runs in
 * the background of the instance that started it; `stop` pauses it between batches (shutdown); a
 * start resumes a paused job, or one whose instance died (its lease ran out), from its cursors. A
 * walk resumed on another node after a failover may see a key twice or miss one: each job says
 * what that costs it.
 */
export function createKeyWalkJob<J extends JobRun>(deps: {
  /** Its name in the store's keys (keys.adminJob). */
  name: string;
  store: Store;
  redis: Redis | undefined;
  now: () => number;
  /** The SCAN pattern of the keys it visits. */
  pattern: string;
  /** The job before any run: what a fresh run starts counting from. */
  idle: () => J;
  /** Whether a start must begin afresh even from a paused run (the re-encryption: a new key). */
  outdated?: (current: J) => boolean;
  /** One key of the walk: counted into `job` (mutated), and acted on. */
  visit: (job: J, key: string) => Promise<void>;
  /** The walk is done, and `job` is about to be saved so: what the job keeps of it (the census). */
  finish?: (job: J) => Promise<void>;
  /** Told after each batch (the CLI prints progress). */
  onBatch?: (job: J) => void;
  /** Keys asked for at a time (default 500). */
  batch?: number;
}) {
  const { store, redis, now, name } = deps;
  const stateKey = keys.adminJob(name);
  const leaseKey = keys.adminJobLease(name);
  const leases = createLeases(store);
  const size = deps.batch ?? BATCH;
  let running: Promise<J> | null = null;
  let stopping = false;

  const read = async (): Promise<Stored<J>> => {
    const raw = await store.get(stateKey);
    return raw === null ? { ...deps.idle(), cursors: {} } : (JSON.parse(raw) as Stored<J>);
  };
  const save = (job: Stored<J>): Promise<void> =>
    store.set(stateKey, JSON.stringify(job), STATE_TTL_MS);
  const iso = () => new Date(now()).toISOString();

  async function advance(job: Stored<J>, lease: Lease): Promise<J> {
    const walker = redis
      ? redisWalker(redis, deps.pattern, size)
      : memoryWalker(store, deps.pattern, size);
    try {
      for (;;) {
        if (stopping) {
          job.state = 'paused';
          break;
        }
        const step = await walker(job.cursors);
        if (!step) {
          Object.assign(job, { state: 'done', finishedAt: iso() });
          await deps.finish?.(job);
          break;
        }
        for (const key of step.keys) await deps.visit(job, key);
        // Lost (this instance stalled past it): another took the job over from the cursors saved
        // before this batch, and does it again; this one says nothing.
        if (!(await leases.renew(lease, LEASE_MS))) return visible(job);
        job.cursors = step.cursors;
        await save(job);
        deps.onBatch?.(visible(job));
      }
    } catch (error) {
      // Its name only: a message could quote a key, and a key names a session.
      Object.assign(job, { state: 'failed', error: (error as Error).name, finishedAt: iso() });
    }
    await save(job).catch(() => undefined);
    await leases.release(lease).catch(() => undefined);
    return visible(job);
  }

  return {
    /** Starts the job, or resumes it; answers at once with its state (the work goes on). */
    async start(actor: Actor): Promise<J> {
      const lease = await leases.take(leaseKey, LEASE_MS);
      // Another instance runs it: as it stands. Else read once holding it, so no other moves it.
      const current = await read();
      if (!lease) return visible(current);
      const fresh =
        current.state === 'idle' || current.state === 'done' || deps.outdated?.(current) === true;
      const job: Stored<J> = fresh
        ? {
            ...deps.idle(),
            state: 'running',
            startedAt: iso(),
            startedBy: actor.name,
            cursors: {},
          }
        : { ...current, state: 'running', finishedAt: null, error: null };
      await save(job);
      stopping = false;
      running = advance(job, lease).finally(() => {
        running = null;
      });
      return visible(job);
    },

    /** The job as stored; one left running by an instance whose lease ran out shows `paused`. */
    async state(): Promise<J> {
      const job = visible(await read());
      if (job.state === 'running' && !running && !(await leases.held(leaseKey)))
        return { ...job, state: 'paused' };
      return job;
    },

    /** What this instance runs, once it ends; null when it runs nothing. */
    settled(): Promise<J> | null {
      return running;
    },

    /** Pauses the job this instance runs, between two batches (shutdown). */
    async stop(): Promise<void> {
      stopping = true;
      await running;
    },
  };
}
export type KeyWalkJob<J extends JobRun> = ReturnType<typeof createKeyWalkJob<J>>;
