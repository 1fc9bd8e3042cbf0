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
 * them (main.ts composes both); tests may use them alone.
 */
export function composeServices(deps: ServiceDeps) {
  const { config, store, log } = deps;
  const now = deps.now ?? Date.now;
  const sleep =
    deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tokenTimeoutMs = deps.tokenTimeoutMs ?? config.refresh.tokenTimeoutMs;
  const sealer = createSealer(config.keyring);
  const provider = createProvider({
    clientId: config.provider.clientId,
    clientSecret: config.provider.clientSecret,
    redirectUri: config.provider.redirectUri,
    dispatcher: deps.dispatcher,
    now,
    timeoutMs: tokenTimeoutMs,
  });
  const events = deps.events ?? noEvents;
  const sessions = createSessions(store, now, config.sessions.lifetime, events);
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
    leaseMs: deps.tokenTimeoutMs === undefined ? config.refresh.leaseMs : tokenTimeoutMs + 5000,
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
