import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { find, OVERLAYS, render, specOf } from '../support/kubernetes.ts';

/**
 * The PrometheusRule's alerts, taken out of the rendered manifests and given to promtool (the
 * Prometheus project's own checker): the rules must load, and each alert must fire on the series
 * that mean trouble and stay quiet on a healthy broker's (`promtool test rules`).
 */
interface RuleGroup {
  name: string;
  rules: { alert: string; expr: string; for?: string }[];
}

let dir: string;
let groups: RuleGroup[];
let rulesFile: string;

const promtool = (args: string[]) =>
  promisify(execFile)('promtool', args, { cwd: dir }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? 1,
      output: (error.stdout ?? '') + (error.stderr ?? ''),
    }),
  );

beforeAll(async () => {
  const [first, ...others] = await Promise.all(OVERLAYS.map((overlay) => render(overlay)));
  groups = specOf<{ groups: RuleGroup[] }>(find(first!, 'PrometheusRule', 'baton-broker')).groups;
  // The same alerts in every overlay: the base holds them.
  for (const objects of others)
    expect(
      specOf<{ groups: RuleGroup[] }>(find(objects, 'PrometheusRule', 'baton-broker')).groups,
    ).toEqual(groups);
  dir = await mkdtemp(join(tmpdir(), 'baton-alerts-'));
  rulesFile = join(dir, 'rules.yaml');
  await writeFile(rulesFile, stringify({ groups }));
});

afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const alerts = () => groups.flatMap((group) => group.rules.map((rule) => rule.alert));

/** Labels every scraped series of one broker pod carries (the ServiceMonitor's). */
const POD = { namespace: 'baton', pod: 'baton-broker-7d9-abcde', job: 'baton-broker' };
const series = (name: string, labels: Record<string, string>, values: string) => ({
  series: `${name}{${Object.entries({ ...POD, ...labels })
    .map(([label, value]) => `${label}="${value}"`)
    .join(',')}}`,
  values,
});

/**
 * One scenario per alert: the series, when to look, and what must fire then (labels and the
 * rendered annotations), or nothing.
 */
interface Scenario {
  alert: string;
  what: string;
  input: { series: string; values: string }[];
  at: string;
  fires?: { labels: Record<string, string>; annotations: Record<string, string> };
}

const SCENARIOS: Scenario[] = [
  {
    alert: 'BatonConnectionsLost',
    what: 'refresh tokens refused by the provider',
    input: [series('baton_refresh_total', { outcome: 'rejected' }, '0 0 0 3 3 3')],
    at: '5m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton', outcome: 'rejected' },
      annotations: {
        summary: 'Baton: 3 connections rejected in 15 minutes',
        description:
          'Refreshes ended with `rejected` in baton; each such user must authorize again. A burst of them points at the client secret or the provider (docs/operations.md, "Rotating keys and secrets").',
      },
    },
  },
  {
    alert: 'BatonConnectionsLost',
    what: 'refreshes that all succeed',
    input: [series('baton_refresh_total', { outcome: 'refreshed' }, '0+5x10')],
    at: '10m',
  },
  {
    alert: 'BatonProviderUnavailable',
    what: 'transient failures for 20 minutes',
    input: [series('baton_refresh_total', { outcome: 'transient' }, '0+2x30')],
    at: '25m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton' },
      annotations: {
        summary: "Baton: the provider's token endpoint has failed for 15 minutes",
        description:
          'Refreshes in baton have been failing transiently (timeouts, 5xx, 429) for 15 minutes; the broker retries with back-off.',
      },
    },
  },
  {
    alert: 'BatonProviderUnavailable',
    what: 'transient failures for 10 minutes only',
    input: [series('baton_refresh_total', { outcome: 'transient' }, '0+2x10 20x20')],
    at: '25m',
  },
  {
    alert: 'BatonRedisErrors',
    what: 'Redis commands failing',
    input: [series('baton_redis_errors_total', {}, '0 0 4 4')],
    at: '3m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton', pod: POD.pod },
      annotations: {
        summary: `Baton: Redis errors on ${POD.pod}`,
        description: `4 Redis commands failed or timed out in 5 minutes on ${POD.pod} (baton): the broker answers 503 while Redis cannot serve it.`,
      },
    },
  },
  {
    alert: 'BatonRedisErrors',
    what: 'no Redis error',
    input: [series('baton_redis_errors_total', {}, '0x10')],
    at: '10m',
  },
  {
    alert: 'BatonServerErrors',
    what: 'one answer in eleven a 503, for 20 minutes',
    input: [
      series(
        'baton_http_requests_total',
        { status: '200', route: '/connections/:id/api/{*path}' },
        '0+600x30',
      ),
      series(
        'baton_http_requests_total',
        { status: '503', route: '/connections/:id/api/{*path}' },
        '0+60x30',
      ),
    ],
    at: '20m',
    fires: {
      labels: { severity: 'critical', namespace: 'baton' },
      annotations: {
        summary: 'Baton: 9.091% of answers are 5xx',
        description: 'More than 5 % of the answers in baton have been 5xx for 10 minutes.',
      },
    },
  },
  {
    alert: 'BatonServerErrors',
    what: 'one answer in a hundred a 503',
    input: [
      series(
        'baton_http_requests_total',
        { status: '200', route: '/connections/:id/api/{*path}' },
        '0+600x30',
      ),
      series(
        'baton_http_requests_total',
        { status: '503', route: '/connections/:id/api/{*path}' },
        '0+6x30',
      ),
    ],
    at: '20m',
  },
  {
    alert: 'BatonBrokerNotReady',
    what: 'a broker unready for 15 minutes',
    input: [
      {
        series:
          'kube_deployment_status_replicas_unavailable{namespace="baton",deployment="baton-broker"}',
        values: '1x20',
      },
    ],
    at: '15m',
    fires: {
      labels: { severity: 'critical', namespace: 'baton' },
      annotations: {
        summary: 'Baton: 1 brokers not ready for 10 minutes',
        description:
          'Pods of baton-broker in baton have answered 503 at /readyz for 10 minutes (Redis unreachable, or a record sealed with a key the broker lacks).',
      },
    },
  },
  {
    alert: 'BatonBrokerNotReady',
    what: 'a broker unready for the length of a rollout',
    input: [
      {
        series:
          'kube_deployment_status_replicas_unavailable{namespace="baton",deployment="baton-broker"}',
        values: '0 1 1 1 0x10',
      },
    ],
    at: '13m',
  },
  {
    alert: 'BatonBrokerDown',
    what: 'a broker that answers no scrape',
    input: [series('up', {}, '1 0x10')],
    at: '7m',
    fires: {
      labels: { severity: 'critical', ...POD },
      annotations: {
        summary: `Baton: ${POD.pod} does not answer`,
        description: `Prometheus has not scraped ${POD.pod} (baton) for 5 minutes.`,
      },
    },
  },
  {
    alert: 'BatonBrokerDown',
    what: 'a broker scraped every time',
    input: [series('up', {}, '1x10')],
    at: '10m',
  },
  {
    alert: 'BatonEventsDeadLettered',
    what: 'an event given up on',
    input: [series('baton_events_dead_lettered_total', { reason: 'expired' }, '0 0 1 1')],
    at: '3m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton' },
      annotations: {
        summary: 'Baton: 1 events dead-lettered',
        description:
          'Events were set aside as dead letters in baton (the receiver missed them for 24 hours, or a cap was reached); docs/events.md, "Delivery".',
      },
    },
  },
  {
    alert: 'BatonEventsDeadLettered',
    what: 'events delivered',
    input: [series('baton_events_delivered_total', {}, '0+3x10')],
    at: '10m',
  },
  {
    alert: 'BatonEventDeliveryFailing',
    what: 'deliveries failing for 40 minutes',
    input: [series('baton_event_delivery_failures_total', {}, '0+1x45')],
    at: '42m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton' },
      annotations: {
        summary: 'Baton: event deliveries have failed for 30 minutes',
        description:
          'Event deliveries in baton have been failing for 30 minutes; they are retried with back-off for 24 hours, then dead-lettered.',
      },
    },
  },
  {
    alert: 'BatonEventDeliveryFailing',
    what: 'a receiver down for 10 minutes, then back',
    input: [series('baton_event_delivery_failures_total', {}, '0+1x10 10x35')],
    at: '42m',
  },
  {
    alert: 'BatonEventsBacklogNearCap',
    what: 'a receiver down long enough for 90,000 events of 100,000 to wait',
    input: [
      series('baton_events_backlog', { kind: 'events' }, '50000+2000x20 90000x10'),
      series('baton_events_limit', { kind: 'backlog' }, '100000x30'),
    ],
    at: '30m',
    fires: {
      labels: { severity: 'warning', namespace: 'baton' },
      annotations: {
        summary: 'Baton: 90000 events waiting for delivery, near the cap',
        description:
          'More than 80 % of EVENTS_BACKLOG_MAX events wait for delivery in baton; at the cap the oldest are dead-lettered (docs/events.md, "Delivery").',
      },
    },
  },
  {
    alert: 'BatonEventsBacklogNearCap',
    what: 'a backlog that drains',
    input: [
      series('baton_events_backlog', { kind: 'events' }, '90000-5000x18'),
      series('baton_events_limit', { kind: 'backlog' }, '100000x30'),
    ],
    at: '20m',
  },
];

describe('the PrometheusRule', () => {
  it('passes promtool check rules', async () => {
    const { code, output } = await promtool(['check', 'rules', rulesFile]);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('fires each alert on the series that mean trouble, and on nothing else (promtool test rules)', async () => {
    // Every alert has a scenario that fires it and one that does not.
    for (const alert of alerts()) {
      const mine = SCENARIOS.filter((scenario) => scenario.alert === alert);
      expect(
        mine.some((scenario) => scenario.fires),
        `${alert} fires somewhere`,
      ).toBe(true);
      expect(
        mine.some((scenario) => !scenario.fires),
        `${alert} stays quiet somewhere`,
      ).toBe(true);
    }
    const tests = join(dir, 'tests.yaml');
    await writeFile(
      tests,
      stringify({
        rule_files: [rulesFile],
        evaluation_interval: '1m',
        tests: SCENARIOS.map((scenario) => ({
          name: `${scenario.alert}: ${scenario.what}`,
          interval: '1m',
          input_series: scenario.input,
          alert_rule_test: [
            {
              eval_time: scenario.at,
              alertname: scenario.alert,
              exp_alerts: scenario.fires
                ? [
                    {
                      exp_labels: scenario.fires.labels,
                      exp_annotations: scenario.fires.annotations,
                    },
                  ]
                : [],
            },
          ],
        })),
      }),
    );
    const { code, output } = await promtool(['test', 'rules', tests]);
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('holds the alerts docs/operations.md names, and only those', async () => {
    const operations = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const named = new Set([...operations.matchAll(/`(Baton[A-Z]\w+)`/g)].map((found) => found[1]));
    expect([...named].sort()).toEqual(alerts().sort());
  });
});
