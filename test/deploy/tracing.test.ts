import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { BrokerProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { useWorld } from '../support/world.ts';
import { until } from '../support/wait.ts';

/**
 * OpenTelemetry traces of a broker process, exported by OTLP/HTTP (JSON) to a collector of the
 * test's own, as the standard OTEL_* variables configure it.
 */
const PUBLIC_URL = 'http://baton.tracing.test';
const LICENSE = 'lic-1001';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** What an OTLP/HTTP collector was sent: every span, and the raw bodies. */
const collector = { spans: [] as Span[], bodies: [] as string[] };

const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });
let server: Receiver;
let endpoint: string;

beforeAll(async () => {
  server = await startReceiver((req, body, res) => {
    if (req.url === '/v1/traces') {
      collector.bodies.push(body);
      const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] };
      for (const resource of parsed.resourceSpans)
        for (const scope of resource.scopeSpans) collector.spans.push(...scope.spans);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  endpoint = server.origin;
});

afterAll(async () => {
  await server?.close();
});

const attribute = (span: Span, key: string): unknown => {
  const value = span.attributes?.find((each) => each.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

describe('OpenTelemetry tracing (OTEL_*)', () => {
  it('one proxied call that refreshes is one trace, continuing the caller’s, with no secret in it', async () => {
    const broker = await BrokerProcess.start(
      world.freshEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }),
    );
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    expect(control.expireAccessTokens(LICENSE)).toBeGreaterThan(0);

    // The caller's trace: the extension may send a traceparent.
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const before = control.requests().length;
    const answer = await callApi(client, 0, session, 'users.me', {
      headers: {
        traceparent: `00-${traceId}-${callerSpan}-01`,
        // What the caller says beside its trace is its own: it never goes upstream.
        tracestate: 'caller=c2VjcmV0LXN0YXRl',
        baggage: 'user.id=attacker,plan=free',
      },
    });
    expect(answer.status).toBe(200);

    const inTrace = () => collector.spans.filter((span) => span.traceId === traceId);
    await until(() => inTrace().some((span) => span.kind === 2), {
      what: 'the request’s spans at the collector',
    });
    // Let the batch with the last child spans arrive too.
    await until(() => inTrace().some((span) => span.name === 'baton.refresh'), {
      what: 'the refresh span',
    });
    const spans = inTrace();
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const [server] = spans.filter((span) => span.kind === 2);
    expect(server).toMatchObject({
      name: 'GET /connections/:id/api/{*path}',
      parentSpanId: callerSpan,
    });
    expect(attribute(server!, 'http.response.status_code')).toBe(200);
    const parentName = (span: Span) => byId.get(span.parentSpanId ?? '')?.name;

    const refresh = spans.find((span) => span.name === 'baton.refresh')!;
    expect(parentName(refresh)).toBe(server!.name);
    // The provider expired the token early: the API said 401, the broker refreshed and retried.
    expect(attribute(refresh, 'baton.refresh.reason')).toBe('rejected');
    // Outbound calls: the token endpoint within the refresh; the license API twice.
    const outbound = spans.filter((span) => span.kind === 3 && span.name.startsWith('POST'));
    expect(outbound.map(parentName)).toEqual(['baton.refresh']);
    const api = spans.filter((span) => span.kind === 3 && span.name === 'GET');
    expect(api.map(parentName)).toEqual([server!.name, server!.name]);
    expect(String(attribute(api[0]!, 'url.full'))).toMatch(/\/users\.me$/);
    // Store operations, under the request or the refresh.
    const redis = spans.filter((span) => span.name.startsWith('redis '));
    expect(redis.length).toBeGreaterThan(3);
    for (const span of redis) expect([server!.name, 'baton.refresh']).toContain(parentName(span));

    // The provider got the trace: W3C traceparent on the token request and the API call.
    const upstream = control.requests().slice(before);
    expect(upstream.map((entry) => entry.target)).toEqual(['api', 'token', 'api']);
    for (const entry of upstream) {
      expect(String(entry.headers['traceparent'])).toMatch(
        new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
      );
      expect(entry.headers['tracestate']).toBeUndefined();
      expect(entry.headers['baggage']).toBeUndefined();
    }

    console.log(
      '[tracing] the trace:\n' +
        spans
          .map(
            (span) => `  ${span.name}  ←  ${parentName(span) ?? `(caller ${span.parentSpanId})`}`,
          )
          .join('\n'),
    );

    await broker.stop();
    const exported = collector.bodies.join('\n');
    const secrets = [...control.secrets(), session.token, world.freshEnv()['CLIENT_SECRET'] ?? ''];
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets.filter((each) => each.length > 8))
      expect(exported).not.toContain(secret);
    // Keys hold the session id: none of them is exported either.
    expect(exported).not.toMatch(/baton:\{/);
    await client.close();
  });

  it.each([
    ['does not let a caller’s sampled flag force spans past a sampler ratio of 0', {}, 0],
    [
      'lets it decide with TRACE_TRUST_CALLER_SAMPLING=true (behind a proxy of your own)',
      { TRACE_TRUST_CALLER_SAMPLING: 'true' },
      20,
    ],
  ])('%s', async (_name, extra, serverSpans) => {
    const broker = await BrokerProcess.start(
      world.freshEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0',
        ...extra,
      }),
    );
    const traceId = randomBytes(16).toString('hex');
    for (let call = 0; call < 20; call++) {
      const answer = await fetch(`${broker.url}/readyz`, {
        headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      });
      expect(answer.status).toBe(200);
    }
    // Stopped, the broker flushes every span it kept.
    expect(await broker.stop()).toBe(0);
    const inTrace = collector.spans.filter((span) => span.traceId === traceId);
    expect(inTrace.filter((span) => span.kind === 2)).toHaveLength(serverSpans);
  });

  it('is off without OTEL_*: nothing is exported', async () => {
    const sent = collector.bodies.length;
    await using broker = await BrokerProcess.start(world.freshEnv());
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    world.sandbox.sandbox.control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    expect((await callApi(client, 0, session)).status).toBe(200);
    expect(await broker.stop()).toBe(0);
    expect(broker.lines.join('\n')).not.toContain('tracing on');
    expect(collector.bodies.length).toBe(sent);
    await client.close();
  });
});
