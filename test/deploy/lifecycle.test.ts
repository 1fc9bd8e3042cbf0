import { routes } from '@baton/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { Gate } from '../support/gate.ts';
import { BrokerProcess } from '../support/process.ts';
import { RedisServer } from '../support/redis.ts';
import { until } from '../support/wait.ts';
import { useWorld } from '../support/world.ts';

/**
 * The broker process's life around its work: what it says about Redis at start-up, and how it
 * stops on SIGTERM (not ready, drain what is in flight within a bound, then close Redis).
 */
const PUBLIC_URL = 'http://baton.lifecycle.test';
const LICENSE = 'lic-1002';

const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });
let gate: Gate;

beforeAll(async () => {
  gate = await Gate.start(world.sandbox.url);
});

afterAll(async () => {
  await gate?.[Symbol.asyncDispose]();
});

/** A broker on `redisUrl` (the world's, or one of a test's own), its gate an allowed origin too. */
const env = (redisUrl: string, extra: Record<string, string> = {}): Record<string, string> =>
  world.freshEnv({
    API_URL_ALLOWLIST: `${world.sandbox.url},${gate.origin}`,
    REDIS_URL: redisUrl,
    ...extra,
  });

const logged = (broker: BrokerProcess, text: string): number =>
  broker.lines.findIndex((line) => line.includes(text));
const waitForLog = (broker: BrokerProcess, text: string): Promise<void> =>
  until(() => logged(broker, text) >= 0, { what: `the broker to log "${text}"` });

describe('start-up: Redis durability', () => {
  it('warns that tokens can be lost when Redis keeps nothing on disk', async () => {
    await using broker = await BrokerProcess.start(env(world.redis.url));
    await waitForLog(broker, 'keeps no data on disk');
    expect(logged(broker, 'Redis keeps tokens durably')).toBe(-1);
  });

  it('warns about an evicting maxmemory-policy', async () => {
    await using evicting = await RedisServer.start({
      appendonly: true,
      args: ['--maxmemory-policy', 'volatile-lru'],
    });
    await using broker = await BrokerProcess.start(env(evicting.url));
    await waitForLog(broker, 'maxmemory-policy is volatile-lru');
    expect(logged(broker, 'keeps no data on disk')).toBe(-1);
  });

  it('is content with appendonly yes and noeviction', async () => {
    await using durable = await RedisServer.start({
      appendonly: true,
      args: ['--maxmemory-policy', 'noeviction'],
    });
    await using broker = await BrokerProcess.start(env(durable.url));
    await waitForLog(broker, 'Redis keeps tokens durably');
  });

  it('says it cannot tell when CONFIG is disabled, as on managed Redis', async () => {
    await using managed = await RedisServer.start({ args: ['--rename-command', 'CONFIG', '""'] });
    await using broker = await BrokerProcess.start(env(managed.url));
    await waitForLog(broker, 'could not read Redis durability settings');
  });
});

describe('SIGTERM', () => {
  async function connected(broker: BrokerProcess) {
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
    world.control.setConsent({ mode: 'approve', licenseId: LICENSE });
    const session = await connectVia(client, {
      start: 0,
      callback: 0,
      redeem: 0,
      apiUrl: `${gate.origin}/licenses/${LICENSE}`,
    });
    return { client, session };
  }

  it('answers 503 at /readyz, finishes the request in flight, then closes Redis and exits 0', async () => {
    await using broker = await BrokerProcess.start(
      env(world.redis.url, { SHUTDOWN_DELAY_MS: '1500', SHUTDOWN_TIMEOUT_MS: '20000' }),
    );
    const { client, session } = await connected(broker);
    const held = gate.holdAnswer((req) => req.url?.endsWith('/users.me') ?? false);
    const inFlight = callApi(client, 0, session);
    await held.arrived;

    broker.signal('SIGTERM');
    await waitForLog(broker, 'shutting down: not ready');
    const ready = await fetch(`${broker.url}${routes.readyz}`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('connection')).toBe('close');
    expect(await ready.json()).toEqual({ status: 'shutting_down' });

    await waitForLog(broker, 'shutting down: draining');
    held.release();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('connection')).toBe('close');
    expect(await answer.json()).toMatchObject({ email: expect.stringContaining('@') });

    expect(await broker.stop()).toBe(0);
    const steps = ['shutting down: not ready', 'shutting down: draining', '"stopped"'];
    const order = steps.map((step) => logged(broker, step));
    expect(order.every((index) => index >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(logged(broker, 'cutting off')).toBe(-1);
    await client.close();
  });

  it('lets a refresh in flight save the new pair before it closes Redis, though its caller left', async () => {
    const envs = env(world.redis.url, { SHUTDOWN_DELAY_MS: '0', SHUTDOWN_TIMEOUT_MS: '20000' });
    const first = await BrokerProcess.start(envs);
    const { client, session } = await connected(first);
    expect(world.control.expireAccessTokens(LICENSE)).toBeGreaterThan(0);
    const held = gate.holdAnswer((req) => req.url?.endsWith('/oauth2/access_token') ?? false);
    const caller = new AbortController();
    const abandoned = fetch(`${first.url}${routes.proxy(session.id, 'users.me')}`, {
      headers: { authorization: `Bearer ${session.token}` },
      signal: caller.signal,
    }).catch(() => 'aborted');
    await held.arrived;
    caller.abort();
    expect(await abandoned).toBe('aborted');

    first.signal('SIGTERM');
    await waitForLog(first, 'shutting down: draining');
    held.release();
    expect(await first.stop()).toBe(0);
    expect(logged(first, 'refreshed access token')).toBeLessThan(logged(first, '"stopped"'));

    // The pair the provider rotated to is in Redis: the next instance uses it without refreshing.
    await using next = await BrokerProcess.start(envs);
    const { refreshes, token_errors } = world.control.counters();
    const answer = await callApi(
      new Client({ publicUrl: PUBLIC_URL, instances: [next.url] }),
      0,
      session,
    );
    expect(answer.status).toBe(200);
    expect(world.control.counters()).toMatchObject({ refreshes, token_errors });
    expect(refreshes).toBe(1);
    await client.close();
  });

  it('cuts off what is still in flight after SHUTDOWN_TIMEOUT_MS, and still exits 0', async () => {
    await using broker = await BrokerProcess.start(
      env(world.redis.url, { SHUTDOWN_DELAY_MS: '0', SHUTDOWN_TIMEOUT_MS: '300' }),
    );
    const { client, session } = await connected(broker);
    const held = gate.holdAnswer((req) => req.url?.endsWith('/users.me') ?? false);
    const inFlight = callApi(client, 0, session).then(
      (response) => response.status,
      () => 'cut off' as const,
    );
    await held.arrived;

    broker.signal('SIGTERM');
    expect(await broker.stop()).toBe(0);
    expect(await inFlight).toBe('cut off');
    expect(logged(broker, 'cutting off')).toBeGreaterThan(logged(broker, 'draining'));
    held.release();
    await client.close();
  });
});
