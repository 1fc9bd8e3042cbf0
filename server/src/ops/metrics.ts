import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TokenCounters } from '../connections/refresh/service.ts';
import { keys } from '../store/keys.ts';
import { createLeases, type Lease } from '../store/lease.ts';
import type { Store } from '../store/types.ts';
import type { DeadLetterReason, DeliveryCounters } from './event-delivery.ts';
import type { EventLimits } from './events.ts';

/** The webhook delivery, as the metrics read it (ops/event-delivery.ts). */
export interface EventsSource {
  counters: DeliveryCounters;
  backlog(): Promise<{ sessions: number; events: number; deadLetters: number }>;
  /** The caps the backlog is held to (EVENTS_OUTBOX_MAX, EVENTS_BACKLOG_MAX, ...). */
  limits: EventLimits;
}

/** What the metrics read at scrape time: cheap counters kept elsewhere, and the index counts. */
export interface MetricsSources {
  tokens: () => TokenCounters;
  connections: () => Promise<Record<'connected' | 'disconnected', number>>;
  /**
   * Whether this instance reports the store-wide gauges this scrape (one instance at a time
   * does, so that summing over instances counts each connection once). Default: yes.
   */
  reportsStoreWide?: () => Promise<boolean>;
}

export interface Metrics {
  registry: Registry;
  /** A request answered in full: its count and latency by method, route template and status. */
  answered: Answered;
  /** One Redis command failed or went unanswered. */
  redisError(): void;
  /** Wire the scrape-time sources once the app has built them. */
  observe(sources: MetricsSources): void;
  /** Wire the webhook delivery, when EVENTS_WEBHOOK_URL is set. */
  observeEvents(source: EventsSource): void;
}

const REFRESH_OUTCOMES = {
  refreshed: 'refreshes',
  rejected: 'rejected',
  transient: 'transient',
  lost: 'lost',
} as const satisfies Record<string, keyof TokenCounters>;

/**
 * The broker's Prometheus metrics, on a registry of its own (no global state). Routes are the
 * Express templates (`/connections/:id/api/{*path}`), never the raw path: a path holds ids.
 */
/** What the access log tells the metrics of each answer. */
export type Answered = (method: string, route: string, status: number, seconds: number) => void;

export function createMetrics(options: { version?: string; revision?: string } = {}): Metrics {
  const registry = new Registry();
  let sources: MetricsSources | undefined;
  // The process's own: CPU, memory, heap, event-loop delay, GC, handles (prom-client's names).
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which Prometheus's conventions (promtool) refuse; the same counts
  // by type stay (nodejs_active_handles{type}...).
  for (const name of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ])
    registry.removeSingleMetric(name);
  new Gauge({
    name: 'baton_build_info',
    help: 'Always 1: the running broker’s version, git revision and Node.js version, as labels.',
    labelNames: ['version', 'revision', 'nodejs_version'],
    registers: [registry],
  }).set(
    {
      version: options.version ?? 'unknown',
      revision: options.revision ?? 'unknown',
      nodejs_version: process.version,
    },
    1,
  );
  /** Store-wide gauges come from one instance at a time (MetricsSources.reportsStoreWide). */
  const reportsStoreWide = async (): Promise<boolean> =>
    sources !== undefined && (await (sources.reportsStoreWide?.() ?? Promise.resolve(true)));

  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'baton_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'baton_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route template and status.',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  /**
   * The labelled series of each method, route and status, looked up once: prom-client would hash
   * the labels object on every call. Bounded: routes are templates and methods a fixed few.
   */
  const byLabels = new Map<
    string,
    { count: Counter.Internal; latency: Histogram.Internal<string> }
  >();
  const redisErrors = new Counter({
    name: 'baton_redis_errors_total',
    help: 'Redis commands that failed or went unanswered.',
    registers: [registry],
  });

  // Counters kept by the token service, reported as the difference since the last scrape.
  const seen: Partial<Record<keyof TokenCounters, number>> = {};
  const delta = (name: keyof TokenCounters, value: number): number => {
    const change = value - (seen[name] ?? 0);
    seen[name] = value;
    return change;
  };
  new Counter({
    name: 'baton_refresh_total',
    help: 'Token refreshes this instance ran, by outcome: refreshed, rejected (connection disconnected), transient (provider unavailable, will retry), lost (no usable answer).',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      if (!sources) return;
      const counters = sources.tokens();
      for (const [outcome, field] of Object.entries(REFRESH_OUTCOMES))
        this.inc({ outcome }, delta(field, counters[field]));
    },
  });
  new Counter({
    name: 'baton_refresh_lock_waits_total',
    help: 'Times a request waited for another holder of a connection’s refresh lock.',
    registers: [registry],
    collect() {
      if (sources) this.inc(delta('lockWaits', sources.tokens().lockWaits));
    },
  });
  new Gauge({
    name: 'baton_connections',
    help: 'Stored connections by status, across every instance (reported by one instance at a time).',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset();
      if (!sources) return;
      try {
        if (!(await reportsStoreWide())) return;
        const counts = await sources.connections();
        for (const [status, count] of Object.entries(counts)) this.set({ status }, count);
      } catch {
        redisErrors.inc();
      }
    },
  });

  let events: EventsSource | undefined;
  type Counted = 'delivered' | 'failedAttempts' | 'deadLettersDropped';
  const seenEvents: Partial<Record<Counted, number>> = {};
  const eventCounter = (name: string, help: string, field: Counted) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        if (!events) return;
        const value = events.counters[field];
        this.inc(value - (seenEvents[field] ?? 0));
        seenEvents[field] = value;
      },
    });
  eventCounter(
    'baton_events_delivered_total',
    'Events this instance delivered (answered 2xx by the receiver).',
    'delivered',
  );
  eventCounter(
    'baton_event_delivery_failures_total',
    'Delivery attempts of this instance that failed (no answer, a timeout, or not 2xx): tried again later.',
    'failedAttempts',
  );
  const seenDead: Partial<Record<DeadLetterReason, number>> = {};
  new Counter({
    name: 'baton_events_dead_lettered_total',
    help: 'Events this instance set aside as dead letters (see `admin events`), by reason: expired (undelivered 24 h after they were recorded), outbox_full (past EVENTS_OUTBOX_MAX in one session), backlog_full (past EVENTS_BACKLOG_MAX in all).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      if (!events) return;
      for (const [reason, value] of Object.entries(events.counters.deadLettered) as [
        DeadLetterReason,
        number,
      ][]) {
        this.inc({ reason }, value - (seenDead[reason] ?? 0));
        seenDead[reason] = value;
      }
    },
  });
  eventCounter(
    'baton_events_dead_letters_dropped_total',
    'Dead letters this instance dropped to keep them within EVENTS_DEAD_LETTERS_MAX and their 30 days, or did not keep because their session already had its share of them (a tenth of its shard’s).',
    'deadLettersDropped',
  );
  new Gauge({
    name: 'baton_events_backlog',
    help: 'What waits in Redis, across every instance (reported by one instance at a time): sessions with events due, events waiting for delivery, and dead letters.',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      if (!events) return;
      try {
        if (!(await reportsStoreWide())) return;
        const { sessions, events: waiting, deadLetters } = await events.backlog();
        this.set({ kind: 'sessions_due' }, sessions);
        this.set({ kind: 'events' }, waiting);
        this.set({ kind: 'dead_letters' }, deadLetters);
      } catch {
        redisErrors.inc();
      }
    },
  });
  new Gauge({
    name: 'baton_events_limit',
    help: 'The caps on what waits for delivery: events per session (outbox), events in all (backlog), dead letters kept.',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      if (!events) return;
      this.set({ kind: 'outbox' }, events.limits.perSession);
      this.set({ kind: 'backlog' }, events.limits.backlog);
      this.set({ kind: 'dead_letters' }, events.limits.deadLetters);
    },
  });

  return {
    registry,
    observeEvents(source) {
      events = source;
    },
    answered(method, route, status, seconds) {
      const key = `${method} ${route} ${status}`;
      let series = byLabels.get(key);
      if (!series) {
        const labels = { method, route, status: String(status) };
        series = { count: requests.labels(labels), latency: latency.labels(labels) };
        byLabels.set(key, series);
      }
      series.count.inc();
      series.latency.observe(seconds);
    },
    redisError() {
      redisErrors.inc();
    },
    observe(next) {
      sources = next;
    },
  };
}

/**
 * Whether this instance is the one reporting store-wide gauges: the holder of a lease in the
 * store (store/lease.ts), taken by whoever is scraped while it is free and renewed by its holder's
 * scrapes (a minute unscraped and another takes over). Every instance would otherwise report the
 * same totals.
 */
export function storeWideReporter(store: Store) {
  const leases = createLeases(store);
  const LEASE_MS = 60_000;
  let held: Lease | null = null;
  return {
    async reports(): Promise<boolean> {
      if (held && (await leases.renew(held, LEASE_MS))) return true;
      held = await leases.take(keys.metricsReporter, LEASE_MS);
      return held !== null;
    },
    /** At shutdown: the next instance scraped takes over at once. */
    async release(): Promise<void> {
      if (held) await leases.release(held);
      held = null;
    },
  };
}
