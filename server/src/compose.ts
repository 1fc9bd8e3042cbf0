import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from './config/config.ts';
import { createLifecycle } from './connections/lifecycle.ts';
import { createConnectionLoader } from './connections/loader.ts';
import { createConnectionRepository } from './connections/records.ts';
import { createTokenService } from './connections/refresh/service.ts';
import { createSessions } from './connections/sessions.ts';
import { createSealer } from './base/crypto.ts';
import { createHandoffs } from './oauth/handoff.ts';
import { createProvider } from './oauth/provider.ts';
import { createSignIn } from './oauth/sign-in.ts';
import { noEvents, type EventSink } from './connections/events.ts';
import { createDelivery, type Delivery } from './ops/event-delivery.ts';
import { createOutbox } from './ops/events.ts';
import type { Metrics } from './ops/metrics.ts';
import type { StartUp } from './ops/shutdown.ts';
import { createApp, type BrokerApp } from './http/app.ts';
import { storeDeps } from './http/stores.ts';
import { tracingOn } from './base/tracing.ts';
import {
  retryUpgrade,
  upgradeFormat,
  UPGRADE_RETRY_MS,
  type FormatUpgrade,
  type UpgradeOptions,
} from './store/format.ts';
import { createRedis, type Redis } from './store/redis/clients.ts';
import { tracedStore } from './store/traced.ts';
import type { Store } from './store/types.ts';

export interface ServiceDeps {
  config: Config;
  store: Store;
  dispatcher: Dispatcher;
  log: Logger;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Bound on one token request, in ms, instead of config.refresh.tokenTimeoutMs (lease: 5 s longer). */
  tokenTimeoutMs?: number;
  /** Where events are recorded (an outbox, when EVENTS_WEBHOOK_URL is set); default nowhere. */
  events?: EventSink;
}

/**
 * The broker's services, built from its configuration and store, with no HTTP in them: the
 * sealer, the provider's token endpoint client, sessions, connection records and their loader,
 * the token service, and the use cases over them (lifecycle). http/app.ts puts routes in front of
 * them (startBroker composes both); tests may use them alone.
 */
export function composeServices(deps: ServiceDeps) {
  const { config, store, log } = deps;
  const now = deps.now ?? Date.now;
  const sleep =
    deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tokenTimeoutMs = deps.tokenTimeoutMs ?? config.refresh.tokenTimeoutMs;
  const sealer = createSealer(config.keyring);
  const leaseMs =
    deps.tokenTimeoutMs === undefined ? config.refresh.leaseMs : tokenTimeoutMs + 5000;
  const provider = createProvider({
    clientId: config.provider.clientId,
    clientSecret: config.provider.clientSecret,
    redirectUri: config.provider.redirectUri,
    dispatcher: deps.dispatcher,
    now,
    timeoutMs: tokenTimeoutMs,
    // An answer under way is read while the lease holds, with a second to store its pair.
    bodyTimeoutMs: Math.max(100, leaseMs - tokenTimeoutMs - 1000),
  });
  const events = deps.events ?? noEvents;
  // A renewal keeps the licences of the session's connections indexed: the repository's, below.
  const sessions = createSessions(store, now, config.sessions.lifetime, events, {
    renew: (sid, ttlMs) => connections.renew(sid, ttlMs),
  });
  const connections = createConnectionRepository(store, sealer, { sessions, events });
  const tokens = createTokenService({
    store,
    connections,
    provider,
    now,
    sleep,
    log,
    refreshAheadMs: config.refresh.aheadMs,
    refreshMinIntervalMs: config.refresh.minIntervalMs,
    tokenTimeoutMs,
    leaseMs,
  });
  const loadConnection = createConnectionLoader({
    allowlist: config.provider.apiUrlAllowlist,
    connections,
    log,
  });
  const handoffs = createHandoffs({ store, sealer, now });
  const signIn = createSignIn({
    store,
    provider,
    handoffs,
    now,
    log,
    registration: config.provider,
    extensionRedirectUrls: config.extensionRedirectUrls,
  });
  const lifecycle = createLifecycle({
    store,
    handoffs,
    sessions,
    connections,
    loadConnection,
    now,
  });
  return {
    now,
    provider,
    handoffs,
    signIn,
    sessions,
    connections,
    events,
    tokens,
    loadConnection,
    lifecycle,
  };
}
export type Services = ReturnType<typeof composeServices>;

/**
 * Events, when EVENTS_WEBHOOK_URL is set: the outbox in Redis they are recorded to, with the change
 * they report, and the delivery every instance runs (started here); else nothing.
 */
export function composeEvents(deps: {
  config: Config;
  store: Store;
  log: Logger;
  now: () => number;
}): { delivery: Delivery; events: EventSink } | undefined {
  const { config, store, log, now } = deps;
  if (!config.events.webhook) return undefined;
  const limits = config.events.limits;
  const delivery = createDelivery({ ...config.events.webhook, store, fetch, now, log, limits });
  const events = createOutbox({
    store,
    now,
    limits,
    wake: (sid) => delivery.wake(sid),
    onFull: (sid) => delivery.trim(sid),
  });
  delivery.start();
  return { delivery, events };
}

/**
 * What a staged start-up offers the composition (ops/shutdown.ts createStartUp, main.ts's): a
 * check for a signal between stages, waits a signal cuts short, the data format upgrade stopped
 * between batches, and each thing opened registered to be closed if the start-up stops.
 */
export type Stages = Pick<StartUp, 'signal' | 'check' | 'step' | 'whileStoreDown' | 'opened'>;

/** A start-up no signal reaches, whose closes nobody unwinds: a test's, a script's. */
const unstaged: Stages = {
  signal: new AbortController().signal,
  check: () => {},
  step: (work) => work,
  whileStoreDown: (work) => work(),
  opened: () => {},
};

export interface BrokerDeps {
  now: () => number;
  /** Outbound requests: the provider's token endpoint and the proxied API calls. */
  dispatcher: Dispatcher;
  log: Logger;
  /** Prometheus metrics: Redis errors and the events delivery counted too. */
  metrics?: Metrics;
  /** main.ts's start-up; default one no signal reaches. */
  startUp?: Stages;
  /** A stage of its own once Redis answers (main.ts: its durability settings, reported). */
  connected?: (redis: Redis) => Promise<void>;
  /** The store as the broker uses it: a test's wrapper around the real one (test/soak's defects). */
  wrapStore?: (store: Store) => Store;
}

export interface StartedBroker {
  /** Its Redis, or none (no topology configured): the store is then embedded in memory. */
  redis: Redis | undefined;
  /** The store as the broker uses it (wrapped, traced when tracing is on). */
  store: Store;
  services: Services;
  /** The request listener, readiness, and what to let go of in the store at shutdown. */
  broker: BrokerApp;
  /**
   * Stops what runs in the background: the events delivery under way (what is left waits in the
   * outbox), then a data format upgrade taken over (its lease let go). The store, its Redis and
   * the dispatcher are the caller's to close.
   */
  stop(): Promise<void>;
}

/**
 * The broker from its configuration, stage by stage: Redis (when configured), its store brought to
 * this release's data format, events delivery, the services and the app. Never listens: main.ts
 * (or a test) does. A store of a later format throws DataFormatError.
 */
export async function startBroker(config: Config, deps: BrokerDeps): Promise<StartedBroker> {
  const { now, dispatcher, log, metrics, startUp = unstaged } = deps;
  const redis = config.redis.topology
    ? createRedis(config.redis.topology, { cacheEntries: config.redis.cacheEntries })
    : undefined;
  if (redis) {
    redis.client.on('error', (error: Error) => {
      metrics?.redisError();
      log.warn({ err: error }, 'Redis connection error');
    });
    startUp.opened(() => (redis.client.isOpen ? redis.client.destroy() : undefined));
    await startUp.step<unknown>(redis.client.connect());
    if (deps.connected) await startUp.step(deps.connected(redis));
  }
  // Start-up's lines so far are out now: whoever watches it sees how far it got.
  log.flush();
  const stores = storeDeps(redis, {
    now,
    onError: () => metrics?.redisError(),
    waitReplicas: config.redis.waitReplicas,
    waitTimeoutMs: config.redis.waitTimeoutMs,
    onUnreplicated: (acknowledged) =>
      log.warn(
        { acknowledged, wanted: config.redis.waitReplicas },
        'a write was not acknowledged by enough Redis replicas in time: a failover now could lose it',
      ),
  });
  const wrapped = deps.wrapStore?.(stores.store) ?? stores.store;
  const store = tracingOn() ? tracedStore(wrapped) : wrapped;
  startUp.opened(() => store.close());
  const upgrade = await upgraded(store, now, log, startUp, config);
  startUp.opened(() => upgrade.stop());
  startUp.check();

  // Events go to an outbox in Redis with the change they report; every instance delivers them.
  const { delivery, events } = composeEvents({ config, store, log, now }) ?? {};
  if (delivery) {
    metrics?.observeEvents(delivery);
    startUp.opened(() => delivery.stop());
  }
  const services = composeServices({
    config,
    store,
    dispatcher,
    log,
    now,
    ...(events ? { events } : {}),
  });
  const broker = createApp({
    config,
    ...stores,
    store,
    dispatcher,
    log,
    services,
    ...(metrics ? { metrics } : {}),
  });
  startUp.opened(() => broker.release());
  return {
    redis,
    store,
    services,
    broker,
    stop: async () => {
      await delivery?.stop();
      await upgrade.stop();
    },
  };
}

/**
 * The store brought to this release's data format before anything is served (store/format.ts);
 * a signal stops it between two batches, its lease let go. Left to another instance, this one
 * serves, and looks again every few seconds until the upgrade is done, by the other or by itself
 * once the other's lease ran out; `stop` ends that. A store of a later format throws
 * DataFormatError (main.ts stops, saying so). Records are opened with the configured keys, for
 * the licence index (format 3).
 */
async function upgraded(
  store: Store,
  now: () => number,
  log: Logger,
  startUp: Stages,
  config: Pick<Config, 'keyring'>,
): Promise<{ stop(): Promise<void> }> {
  const records = createConnectionRepository(store, createSealer(config.keyring));
  const told: UpgradeOptions = {
    apiUrlOf: ({ sid, id, stored }) => records.open(sid, id, stored).apiUrl,
    // Flushed: whoever watches the start-up sees it move on.
    onBatch: (progress) => {
      log.debug(progress, 'upgrading the data format');
      log.flush();
    },
    onSetAside: ({ key, entry, reason }) =>
      log.warn(
        { key, reason, entry: entry.slice(0, 1000) },
        'set aside an entry of the previous data format that cannot be read',
      ),
    onUnreadable: ({ record, reason }) =>
      log.warn(
        { record, reason },
        'a connection record that cannot be opened is left out of the licence index',
      ),
  };
  const report = (upgrade: FormatUpgrade): void => {
    if (upgrade.leftToAnother)
      log.info(
        { format: upgrade.from, retryMs: UPGRADE_RETRY_MS },
        'another instance is upgrading the data format: serving meanwhile, looking again until it is done',
      );
    else if (upgrade.from !== upgrade.to) {
      // A warning when data moved or was set aside; an empty store (a first start) is only noted.
      const { indexed, scheduled, deadLetters, licences } = upgrade.moved;
      const changed =
        indexed + scheduled + deadLetters + licences + upgrade.setAside + upgrade.unreadable > 0;
      log[changed ? 'warn' : 'info']({ ...upgrade }, 'upgraded the data format of the store');
    }
  };
  // Redis may be loading its dataset (restarted) or failing over as this starts: wait, not ready.
  const upgrade = await startUp.whileStoreDown(
    () => upgradeFormat(store, now, { ...told, signal: startUp.signal }),
    (error, ms) => {
      log.warn({ err: error, retryMs: ms }, 'the store does not answer yet: starting once it does');
      log.flush();
    },
  );
  report(upgrade);
  if (!upgrade.leftToAnother) return { stop: async () => {} };
  const stopping = new AbortController();
  const retried = retryUpgrade(store, now, {
    ...told,
    signal: stopping.signal,
    wait: (ms) => delay(ms, undefined, { signal: stopping.signal }),
  }).then(report, (error: unknown) => {
    if (!stopping.signal.aborted)
      log.error({ err: error }, 'the data format upgrade failed: the next start tries again');
  });
  return {
    stop: async () => {
      stopping.abort();
      await retried;
    },
  };
}
