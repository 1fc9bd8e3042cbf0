import { createRedisClient, format1Keys, keys } from '@baton/server';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerEnv } from '../support/broker-env.ts';
import { freePort } from '../support/ports.ts';
import { BrokerProcess } from '../support/process.ts';
import { RedisServer } from '../support/redis.ts';
import { until } from '../support/wait.ts';

/**
 * Start-up on a Redis of format 1, cut short or contested. A SIGTERM at any point of it (a rollout,
 * a startupProbe restart) stops the broker cleanly: exit 0, its lease let go, nothing of the data
 * lost, and the next start finishes the upgrade; a SIGKILL loses nothing either. An instance that
 * died holding the upgrade's lease is taken over by one serving meanwhile; a corrupt dead letter is
 * set aside; and the broker listens last. Each broker is a process started as deployed (main.ts),
 * signalled on seeing a line of its log: its first, one of the upgrade's batches (a debug line), or
 * "broker listening". Where it must stop midway, the data is large enough for the upgrade to take
 * some sixty batches (a few seconds) after the line it is signalled on.
 */
const SESSIONS = 15_000;
/** Two upgrades of SESSIONS each, on a busy 2-core host: some 30 s were seen. */
const MIDWAY_TIMEOUT_MS = 120_000;
const DAY = 24 * 3600 * 1000;
const MAIN = fileURLToPath(new URL('../../server/src/main.ts', import.meta.url));
const FORMAT = '3';

let redis: RedisServer;
let client: ReturnType<typeof createRedisClient>;
let env: Record<string, string>;
/** What format 1 held, by kind: each must be found again, in one format or the other. */
let written: { indexed: number; scheduled: number; deadLetters: number };

beforeAll(async () => {
  redis = await RedisServer.start();
  client = createRedisClient(redis.url);
  await client.connect();
  env = brokerEnv({
    providerUrl: 'http://127.0.0.1:9',
    redis: { REDIS_URL: redis.url },
    extra: { LOG_LEVEL: 'debug' },
  });
});

afterAll(async () => {
  if (client?.isOpen) await client.close();
  await redis?.[Symbol.asyncDispose]();
});

/** Release 0.1's keys for `sessions`: a connection each, each due, every tenth given up on. */
async function formatOne(options: { sessions?: number; deadLetters?: string[] } = {}) {
  await client.flushAll();
  const sessions = options.sessions ?? SESSIONS;
  const sids = Array.from({ length: sessions }, () => randomBytes(32).toString('base64url'));
  const now = Date.now();
  await client.zAdd(
    format1Keys.connectionIndex('connected'),
    sids.map((sid, i) => ({ value: `${sid}:c${i}`, score: now + DAY })),
  );
  await client.zAdd(
    format1Keys.eventsDue,
    sids.map((sid) => ({ value: sid, score: now + 60_000 })),
  );
  const letters = sids
    .filter((_, i) => i % 10 === 0)
    .map((sid, i) =>
      JSON.stringify({
        id: `msg_${i}`,
        type: 'connection.created',
        session_ref: `ses_${sid.slice(0, 22)}`,
        dead_at: new Date(now).toISOString(),
      }),
    );
  const deadLetters = [...letters, ...(options.deadLetters ?? [])];
  await client.rPush(format1Keys.deadLetters, deadLetters);
  written = { indexed: sessions, scheduled: sessions, deadLetters: letters.length };
}

/** Members of format 1's keys, and of format 2's shards, by kind. */
async function tally() {
  const sum = async (pattern: string) => {
    let total = 0;
    for await (const batch of client.scanIterator({ MATCH: pattern, COUNT: 1000 }))
      for (const key of batch) total += await client.zCard(key);
    return total;
  };
  return {
    old: {
      indexed: await client.zCard(format1Keys.connectionIndex('connected')),
      scheduled: await client.zCard(format1Keys.eventsDue),
      deadLetters: await client.lLen(format1Keys.deadLetters),
    },
    new: {
      indexed: await sum('baton:{stats:*}:connections:connected'),
      scheduled: await sum('baton:{events:*}:due'),
      deadLetters: await sum('baton:{events:*}:dead'),
    },
  };
}

/**
 * A broker started on `env`, sent `signal` on the first line of its log that matches `at` (or, if
 * none did, on "broker listening"), and left to exit: how it exited, and on which line.
 */
async function signalledOn(at: RegExp, signal: NodeJS.Signals = 'SIGTERM') {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let signalled: string | undefined;
  const onLine = (line: string) => {
    lines.push(line);
    if (signalled === undefined && (at.test(line) || line.includes('"broker listening"'))) {
      signalled = line;
      child.kill(signal);
    }
  };
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  // 'close', not 'exit': the last lines may still be in the pipes when it exits.
  const [code, killedBy] = await new Promise<[number | null, string | null]>((resolve) =>
    child.once('close', (...exit) => resolve(exit)),
  );
  return { code, signal: killedBy, signalled: signalled ?? '', lines };
}

/** A start that runs to the end on the same Redis, then stops: it finishes the upgrade. */
async function startAgain(): Promise<BrokerProcess> {
  const broker = await BrokerProcess.start(env);
  expect(await broker.stop()).toBe(0);
  return broker;
}

describe('a SIGTERM while the broker starts on a Redis of format 1', () => {
  it.each([
    { point: 'on its first line, as the upgrade begins', at: /./, sessions: 2000 },
    {
      point: 'during the upgrade, on a batch moved',
      at: /"upgrading the data format"/,
      sessions: SESSIONS,
      midway: true,
    },
    { point: 'as it says "broker listening"', at: /"broker listening"/, sessions: 2000 },
  ])(
    '$point: it exits 0, lets go of the lease, and loses nothing; the next start finishes',
    async ({ at, sessions, midway }) => {
      await formatOne({ sessions });
      const stopped = await signalledOn(at);
      expect(stopped.signalled).toMatch(at);
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
      expect(stopped.lines.filter((line) => line.includes('"msg":"stopped"'))).toHaveLength(1);
      expect(await client.exists(keys.dataFormatUpgrade)).toBe(0);
      const after = await tally();
      for (const kind of ['indexed', 'scheduled', 'deadLetters'] as const)
        expect(after.old[kind] + after.new[kind], kind).toBe(written[kind]);
      // Stopped midway (unless the signal landed after the last batch, on a busy host: the unit
      // tests of format.ts stop it at every write): some moved, the rest left, the format not said.
      if (midway && (after.old.indexed + after.old.scheduled > 0 || after.new.indexed === 0)) {
        expect(after.new.indexed).toBeGreaterThan(0);
        expect(after.old.indexed + after.old.scheduled).toBeGreaterThan(0);
        expect(await client.get(keys.dataFormat)).toBeNull();
      }

      await startAgain();
      expect(await client.get(keys.dataFormat)).toBe(FORMAT);
      expect(await tally()).toEqual({
        old: { indexed: 0, scheduled: 0, deadLetters: 0 },
        new: written,
      });
    },
    MIDWAY_TIMEOUT_MS,
  );
});

describe('an instance killed outright (SIGKILL) during the upgrade', () => {
  it(
    'loses nothing: once its lease runs out, the next start copies that batch again and moves the rest',
    async () => {
      await formatOne();
      const killed = await signalledOn(/"upgrading the data format"/, 'SIGKILL');
      expect(killed.signalled).toContain('"upgrading the data format"');
      expect(killed.signal).toBe('SIGKILL');
      expect(await client.get(keys.dataFormat)).toBeNull();
      // Its lease runs out (a minute, in production).
      expect(await client.pExpire(keys.dataFormatUpgrade, 1)).toBe(1);
      await startAgain();
      expect(await client.get(keys.dataFormat)).toBe(FORMAT);
      expect(await tally()).toEqual({
        old: { indexed: 0, scheduled: 0, deadLetters: 0 },
        new: written,
      });
    },
    MIDWAY_TIMEOUT_MS,
  );
});

describe('an instance that died during the upgrade, holding its lease', () => {
  it('is taken over: a broker started meanwhile serves, and finishes the upgrade once the lease runs out', async () => {
    await formatOne({ sessions: 100 });
    await client.set(keys.dataFormatUpgrade, 'an instance that died', { PX: 60_000 });
    await using broker = await BrokerProcess.start(env);
    expect(broker.lines.some((line) => line.includes('another instance is upgrading'))).toBe(true);
    expect(await client.get(keys.dataFormat)).toBeNull();
    // The dead instance's lease runs out (a minute after its last batch, in production).
    expect(await client.pExpire(keys.dataFormatUpgrade, 1)).toBe(1);
    await until(async () => (await client.get(keys.dataFormat)) === FORMAT, {
      deadlineMs: 20_000,
      intervalMs: 100,
      what: 'the format key',
    });
    expect(await broker.stop()).toBe(0);
    expect(broker.lines.some((line) => line.includes('upgraded the data format'))).toBe(true);
    expect(await client.exists(keys.dataFormatUpgrade)).toBe(0);
    expect((await tally()).new).toEqual(written);
  });
});

describe('a format 1 dead letter that does not parse', () => {
  it('is set aside, counted and logged with why; the broker starts, and so does the next', async () => {
    await formatOne({ sessions: 100, deadLetters: ['{"id":"msg_torn",'] });
    const broker = await startAgain();
    const setAside = broker.lines.filter((line) => line.includes('set aside'));
    expect(setAside).toHaveLength(1);
    expect(setAside[0]).toContain('not a JSON object');
    expect(setAside[0]).toContain('msg_torn');
    const upgraded = broker.lines.find((line) => line.includes('upgraded the data format'));
    expect(JSON.parse(upgraded ?? '{}')).toMatchObject({ setAside: 1 });
    expect(await tally()).toEqual({
      old: { indexed: 0, scheduled: 0, deadLetters: 0 },
      new: written,
    });
    await startAgain();
  });
});

describe('a connection record that cannot be opened (sealed under a key no longer configured)', () => {
  it('is counted and logged, naming no session id, and left in place; the broker starts', async () => {
    await formatOne({ sessions: 100 });
    const sid = randomBytes(32).toString('base64url');
    const sealed = '1:retired.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA';
    await client.set(keys.session(sid), '[0,0,0]', { PX: DAY });
    await client.set(keys.connection(sid, 'c-retired'), sealed, { PX: DAY });
    const broker = await startAgain();
    const unreadable = broker.lines.filter((line) => line.includes('cannot be opened'));
    expect(unreadable).toHaveLength(1);
    expect(unreadable[0]).toContain('c-retired');
    expect(unreadable[0]).toContain('retired');
    expect(broker.lines.filter((line) => line.includes(sid))).toEqual([]);
    const upgraded = broker.lines.find((line) => line.includes('upgraded the data format'));
    expect(JSON.parse(upgraded ?? '{}')).toMatchObject({ unreadable: 1, to: 3 });
    expect(await client.get(keys.connection(sid, 'c-retired'))).toBe(sealed);
    expect(await client.get(keys.dataFormat)).toBe(FORMAT);
  });
});

describe('the end of start-up', () => {
  it('listens last: "broker listening" (and /readyz) only once the upgrade and the metrics listener are done', async () => {
    await formatOne({ sessions: 100 });
    const metricsPort = await freePort();
    await using broker = await BrokerProcess.start({ ...env, METRICS_PORT: String(metricsPort) });
    const at = (text: string) => broker.lines.findIndex((line) => line.includes(text));
    expect(at('upgraded the data format')).toBeGreaterThanOrEqual(0);
    expect(at('"metrics listening"')).toBeGreaterThan(at('upgraded the data format'));
    expect(at('"broker listening"')).toBeGreaterThan(at('"metrics listening"'));
    const [ready, metrics] = await Promise.all([
      fetch(`${broker.url}/readyz`),
      fetch(`http://127.0.0.1:${metricsPort}/metrics`),
    ]);
    expect(ready.status).toBe(200);
    expect(metrics.status).toBe(200);
    expect(await broker.stop()).toBe(0);
  });
});
