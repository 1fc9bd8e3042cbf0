import { createSealer, type Keyring } from '../base/crypto.ts';
import { noEvents, type EventSink } from '../connections/events.ts';
import { createConnectionRepository, type ConnectionRepository } from '../connections/records.ts';
import { createRefreshOutcomes } from '../connections/refresh/outcomes.ts';
import { createSessions, type SessionLifetime, type Sessions } from '../connections/sessions.ts';
import { OUTBOX_RETENTION_MS } from '../ops/events.ts';
import { eventShard, keys } from '../store/keys.ts';
import type { Redis } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import { createActionEvents } from './actions.ts';
import { createCensusJob } from './census-job.ts';
import { createAdminConnections } from './connections.ts';
import { createDeadLetters } from './dead-letters.ts';
import { createOverview } from './overview.ts';
import { createReencryptJob } from './reencrypt-job.ts';
import type { Actor, AdminUseCases, CensusJob, ReencryptJob } from './types.ts';
import { createWalks } from './walk.ts';

export { AdminInputError } from './walk.ts';

/** What main.ts (the admin API) and admin.ts (the CLI) give the use cases. */
export interface AdminDeps {
  /** The broker's Redis; undefined when the store is embedded in memory. */
  redis: Redis | undefined;
  store: Store;
  keyring: Keyring;
  /** The broker's sessions and connection records (compose.ts composeServices). */
  sessions: Sessions;
  connections: ConnectionRepository;
  /** Where events are recorded (an outbox when EVENTS_WEBHOOK_URL is set); noEvents: off. */
  events: EventSink;
  now: () => number;
  build: { version: string; revision: string };
  /** Told after each batch of a re-encryption this instance runs (the CLI prints progress). */
  onReencryptBatch?: (job: ReencryptJob) => void;
}

/** The use cases, and what the process that holds them needs beyond the contract. */
export interface AdminService extends AdminUseCases {
  /** The CLI's `drop-session <sid>`: ends a session named by its id (from Redis, say). */
  endSessionOf(sid: string, actor: Actor): ReturnType<AdminUseCases['endSession']>;
  /** The re-encryption this instance runs, once it ends; null when it runs none. */
  reencryptSettled(): Promise<ReencryptJob> | null;
  /** The census this instance runs, once it ends; null when it runs none. */
  censusSettled(): Promise<CensusJob> | null;
  /** Pauses the jobs this instance runs (at shutdown), their state saved for a resume. */
  stop(): Promise<void>;
}

/**
 * The use cases over a store alone, with sessions and records made as the broker makes them
 * (compose.ts composeServices): for the CLI, which runs no broker, and tests.
 */
export function createAdminOverStore(
  deps: Omit<AdminDeps, 'sessions' | 'connections'> & { sessionLifetime?: SessionLifetime },
): AdminService {
  const { store, events, now } = deps;
  // As composeServices wires them: a renewal renews the records through their repository.
  const sessions = createSessions(store, now, deps.sessionLifetime, events, {
    renew: (sid, ttlMs) => connections.renew(sid, ttlMs),
  });
  const sealer = createSealer(deps.keyring);
  const connections = createConnectionRepository(store, sealer, { sessions, events });
  return createAdminUseCases({ ...deps, sessions, connections });
}

/**
 * The operators' use cases (types.ts), over the broker's store, each in a module of its own:
 * overview.ts, connections.ts (find, disconnect, end sessions), dead-letters.ts, the jobs
 * reencrypt-job.ts and census-job.ts (both over key-walk-job.ts); walk.ts for what has no index,
 * actions.ts for the `admin.action` events.
 */
export function createAdminUseCases(deps: AdminDeps): AdminService {
  const { store, redis, now } = deps;
  const walks = createWalks({ store, redis });
  const recordAction = createActionEvents({ store, events: deps.events });
  const connections = createAdminConnections({ ...deps, walks, recordAction });
  const deadLetters = createDeadLetters({ store, now, recordAction });
  const job = createReencryptJob({
    ...deps,
    ...(deps.onReencryptBatch ? { onBatch: deps.onReencryptBatch } : {}),
  });
  const census = createCensusJob({ store, redis, connections: deps.connections, now });
  const overview = createOverview({
    ...deps,
    census,
    walks,
    deadLetters,
    refreshes: createRefreshOutcomes({ store, now }),
    eventsEnabled: deps.events !== noEvents,
  });

  return {
    overview,
    findConnections: (query, limit) => connections.find(query, limit),
    disconnect: (id, actor) => connections.disconnect(id, actor),
    endSession: (ref, actor) => connections.endSession(ref, actor),
    endSessionOf: (sid, actor) => connections.endSessionOf(sid, actor),
    endSessionsOfLicence: (licence, actor) => connections.endSessionsOfLicence(licence, actor),
    deadLetters: (options) => deadLetters.list(options),
    redeliver: (id, actor) => deadLetters.redeliver(id, actor),
    discard: (id, actor) => deadLetters.discard(id, actor),
    async startReencrypt(actor) {
      const started = await job.start(actor);
      await recordAction(actor, 'start_reencrypt', { activeKeyId: started.activeKeyId });
      return started;
    },
    reencryptJob: () => job.state(),
    reencryptSettled: () => job.settled(),
    async startCensus(actor) {
      const started = await census.start(actor);
      await recordAction(actor, 'start_census', {});
      return started;
    },
    censusJob: () => census.state(),
    censusSettled: () => census.settled(),

    /**
     * Schedules every outbox found (a walk: only on demand): an instance that died between writing
     * an event and scheduling its session, while another was emptying that outbox, left it
     * unscheduled. Each keeps its time if it has one.
     */
    async sweepEvents(actor) {
      let outboxes = 0;
      for await (const { sid } of walks.sessionKeys('outbox')) {
        outboxes++;
        await store.schedulePut(keys.eventsDue(eventShard(sid)), sid, now(), {
          onlyIfAbsent: true,
          keepMs: OUTBOX_RETENTION_MS,
        });
      }
      await recordAction(actor, 'sweep_events', { outboxes });
      return { ok: true, outboxes };
    },

    stop: async () => {
      await Promise.all([job.stop(), census.stop()]);
    },
  };
}
