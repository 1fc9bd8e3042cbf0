import { createSealer, MissingKeyError, type Keyring } from '../base/crypto.ts';
import { BrokerError } from '../base/errors.ts';
import type { ConnectionRepository } from '../connections/records.ts';
import { parseSessionKey, sessionKeyPatterns } from '../store/keys.ts';
import type { Redis } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import { createKeyWalkJob } from './key-walk-job.ts';
import type { ReencryptJob } from './types.ts';

/** The job before it ever ran: also what the admin API's unit tests answer with. */
export const idleReencryptJob = (activeKeyId: string): ReencryptJob => ({
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
});

/**
 * Re-encryption under the active key (TOKEN_ENCRYPTION_KEYS' first), as a job over the connection
 * keys (key-walk-job.ts: batches, a lease, cursors per master, pause and resume). A record is
 * sealed again by reading it (records.ts `load`), as any read would. A record seen twice after a
 * failover is sealed again twice (idempotent); one missed stays readable and is sealed again by
 * its next read, or by running the job again. A run paused under another active key starts afresh.
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
  const { keyring, connections } = deps;
  const sealer = createSealer(keyring);

  /** One connection key: sealed again if under another key; counted. */
  async function reseal(job: ReencryptJob, key: string): Promise<void> {
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

  return createKeyWalkJob<ReencryptJob>({
    ...deps,
    name: 'reencrypt',
    pattern: sessionKeyPatterns.connection,
    idle: () => idleReencryptJob(keyring.activeKid),
    outdated: (current) => current.activeKeyId !== keyring.activeKid,
    visit: reseal,
  });
}
export type ReencryptJobs = ReturnType<typeof createReencryptJob>;
