import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from './config.ts';
import { createConnectionLoader } from './connections/loader.ts';
import { createConnectionRepository } from './connections/records.ts';
import { createTokenService } from './connections/refresh/service.ts';
import { createSessions } from './connections/sessions.ts';
import { createSealer } from './crypto.ts';
import { createHandoffs } from './oauth/handoff.ts';
import { createProvider } from './oauth/provider.ts';
import { noEvents, type EventSink } from './ops/events.ts';
import type { Store } from './store/types.ts';

export interface ServiceDeps {
  config: Config;
  store: Store;
  dispatcher: Dispatcher;
  log: Logger;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Bound on one token request, in ms, instead of config.tokenTimeoutMs (lease: 5 s longer). */
  tokenTimeoutMs?: number;
  /** Where events are recorded (an outbox, when EVENTS_WEBHOOK_URL is set); default nowhere. */
  events?: EventSink;
}

/**
 * The broker's services, built from its configuration and store, with no HTTP in them: the
 * sealer, the provider's token endpoint client, sessions, connection records and their loader,
 * and the token service. http/app.ts puts routes in front of them; tests may use them alone.
 */
export function composeServices(deps: ServiceDeps) {
  const { config, store, log } = deps;
  const now = deps.now ?? Date.now;
  const sleep =
    deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tokenTimeoutMs = deps.tokenTimeoutMs ?? config.tokenTimeoutMs;
  const sealer = createSealer(config.keyring);
  const provider = createProvider({
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    redirectUri: config.redirectUri,
    dispatcher: deps.dispatcher,
    now,
    timeoutMs: tokenTimeoutMs,
  });
  const events = deps.events ?? noEvents;
  const sessions = createSessions(store, now, config.sessionLifetime, events);
  const connections = createConnectionRepository(store, sealer, {
    openedEntries: config.redisCacheEntries,
    sessions,
    events,
  });
  const tokens = createTokenService({
    store,
    connections,
    provider,
    now,
    sleep,
    log,
    refreshAheadMs: config.refreshAheadMs,
    refreshMinIntervalMs: config.refreshMinIntervalMs,
    tokenTimeoutMs,
    leaseMs: deps.tokenTimeoutMs === undefined ? config.refreshLeaseMs : tokenTimeoutMs + 5000,
  });
  const loadConnection = createConnectionLoader({ config, connections, log });
  const handoffs = createHandoffs({ store, sealer, now });
  return { now, provider, handoffs, sessions, connections, events, tokens, loadConnection };
}
export type Services = ReturnType<typeof composeServices>;
