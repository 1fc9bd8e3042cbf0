import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import { BrokerProcess } from '../support/process.ts';
import { useWorld } from '../support/world.ts';

/** GET /metrics of a broker process: Prometheus text, behind METRICS_TOKEN or on METRICS_PORT. */
const PUBLIC_URL = 'http://baton.metrics.test';
const LICENSE = 'lic-1001';
const METRICS_TOKEN = randomBytes(24).toString('base64url');

const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });
const env = (extra?: Record<string, string>) => world.freshEnv(extra);

/** One sample's value from Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(url: string, token?: string): Promise<string> {
  const response = await fetch(`${url}/metrics`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return response.text();
}

describe('GET /metrics with METRICS_TOKEN', () => {
  it('answers 404 without the bearer token, as any unknown route', async () => {
    await using broker = await BrokerProcess.start(env({ METRICS_TOKEN }));
    expect((await fetch(`${broker.url}/metrics`)).status).toBe(404);
    const wrong = await fetch(`${broker.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN.slice(1)}x` },
    });
    expect(wrong.status).toBe(404);
  });

  it('counts requests by route template, refreshes by outcome, connections by status, Redis errors', async () => {
    await using broker = await BrokerProcess.start(env({ METRICS_TOKEN }));
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    world.sandbox.sandbox.control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    expect((await callApi(client, 0, session)).status).toBe(200);
    expect(world.sandbox.sandbox.control.expireAccessTokens(LICENSE)).toBeGreaterThan(0);
    expect((await callApi(client, 0, session)).status).toBe(200);

    const text = await scrape(broker.url, METRICS_TOKEN);
    const proxied =
      'baton_http_requests_total{method="GET",route="/connections/:id/api/{*path}",status="200"}';
    expect(sample(text, proxied)).toBe(2);
    expect(
      sample(text, 'baton_http_requests_total{method="POST",route="/session",status="201"}'),
    ).toBe(1);
    expect(text).toContain(
      'baton_http_request_duration_seconds_count{method="GET",route="/connections/:id/api/{*path}",status="200"} 2',
    );
    expect(text).not.toContain(session.id);
    expect(sample(text, 'baton_refresh_total{outcome="refreshed"}')).toBe(1);
    expect(sample(text, 'baton_refresh_total{outcome="rejected"}')).toBe(0);
    expect(sample(text, 'baton_connections{status="connected"}')).toBe(1);
    expect(sample(text, 'baton_connections{status="disconnected"}')).toBe(0);
    expect(sample(text, 'baton_redis_errors_total')).toBe(0);

    // A revoked grant: the next refresh is rejected and the connection counts as disconnected.
    world.sandbox.sandbox.control.revokeGrant(LICENSE);
    world.sandbox.sandbox.control.expireAccessTokens(LICENSE);
    expect((await callApi(client, 0, session)).status).toBe(401);
    const after = await scrape(broker.url, METRICS_TOKEN);
    expect(sample(after, 'baton_refresh_total{outcome="rejected"}')).toBe(1);
    expect(sample(after, 'baton_connections{status="connected"}')).toBe(0);
    expect(sample(after, 'baton_connections{status="disconnected"}')).toBe(1);

    // Redis frozen: commands go unanswered, and each one counts.
    world.redis.pause();
    try {
      expect((await callApi(client, 0, session)).status).toBe(503);
    } finally {
      world.redis.resume();
    }
    expect(
      sample(await scrape(broker.url, METRICS_TOKEN), 'baton_redis_errors_total'),
    ).toBeGreaterThan(0);
    await client.close();
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics on its own port only, and not on the public one', async () => {
    const port = await freePort();
    await using broker = await BrokerProcess.start(env({ METRICS_PORT: String(port) }));
    expect((await fetch(`${broker.url}/metrics`)).status).toBe(404);
    const text = await scrape(`http://127.0.0.1:${port}`);
    expect(text).toContain('# TYPE baton_http_requests_total counter');
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(404);
  });

  it('with METRICS_TOKEN too (as in Kubernetes): there with the token, and not on the public port even with it', async () => {
    const port = await freePort();
    await using broker = await BrokerProcess.start(
      env({ METRICS_PORT: String(port), METRICS_TOKEN }),
    );
    const withToken = { headers: { authorization: `Bearer ${METRICS_TOKEN}` } };
    expect((await fetch(`${broker.url}/metrics`, withToken)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    const text = await scrape(`http://127.0.0.1:${port}`, METRICS_TOKEN);
    expect(text).toContain('# TYPE baton_http_requests_total counter');
  });
});

describe('as Prometheus expects', () => {
  it('passes promtool check metrics, with the process metrics and baton_build_info', async () => {
    await using broker = await BrokerProcess.start(env({ METRICS_TOKEN }));
    const text = await scrape(broker.url, METRICS_TOKEN);
    // promtool reads the exposition from stdin and names every convention broken.
    const check = promisify(execFile)('promtool', ['check', 'metrics']);
    check.child.stdin?.end(text);
    const { stdout, stderr } = await check;
    expect(`${stdout}${stderr}`.trim()).toBe('');
    // Run from source: the package's version (between releases a pre-release, `1.1.0-dev`), and
    // no build to say its revision (test/release/bundle.test.ts checks the built folder's).
    expect(text).toMatch(
      /^baton_build_info\{version="\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?",revision="unknown",nodejs_version="v\d+\.\d+\.\d+"\} 1$/m,
    );
    for (const series of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      '# TYPE nodejs_gc_duration_seconds histogram',
    ])
      expect(text).toContain(series);
  });

  it('store-wide gauges come from one instance at a time, so a sum over instances is right', async () => {
    // A broker killed by an earlier test (SIGKILL) keeps the reporter's lease for its minute.
    const redis = createClient({ url: world.redis.url });
    await redis.connect();
    await redis.del('baton:{stats}:metrics-reporter');
    await redis.close();
    const shared = env({ METRICS_TOKEN });
    const first = await BrokerProcess.start(shared);
    await using second = await BrokerProcess.start(shared);
    const [a, b] = [
      await scrape(first.url, METRICS_TOKEN),
      await scrape(second.url, METRICS_TOKEN),
    ];
    const reporting = [a, b].filter((text) =>
      text.includes('baton_connections{status="connected"}'),
    );
    expect(reporting).toHaveLength(1);
    // The reporter keeps reporting while it is scraped; the other stays quiet.
    expect(await scrape(first.url, METRICS_TOKEN)).toContain('baton_connections{status=');
    expect(await scrape(second.url, METRICS_TOKEN)).not.toContain('baton_connections{status=');
    // Stopped (SIGTERM), the reporter lets go: the other takes over at its next scrape.
    expect(await first.stop()).toBe(0);
    expect(await scrape(second.url, METRICS_TOKEN)).toContain('baton_connections{status=');
  });
});
