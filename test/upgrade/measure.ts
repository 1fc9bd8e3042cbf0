/**
 * How long a broker's start-up takes to upgrade a Redis of the previous data format
 * (docs/upgrading.md):
 *
 *   node test/upgrade/measure.ts [--scale 1,1000,10000] [--main server/src/main.ts]
 *
 * For each scale k, a fresh redis-server holds the keys of fixtures/0.1.0.json and k - 1 copies of
 * what the upgrade moves (each connection in the index, each session in the events' schedule, each
 * dead letter, under fresh session ids), and the broker (`--main`, default this checkout's) starts
 * on it as deployed. What its start-up took, to "broker listening", less the median of three
 * starts on the same Redis once upgraded, is the upgrade's time. Run it alone: the machine's other
 * work shows in the figures.
 */
import { createRedisClient } from '@baton/server';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { brokerEnv } from '../support/broker-env.ts';
import { BrokerProcess } from '../support/process.ts';
import { RedisServer } from '../support/redis.ts';
import { loadFixture } from './fixture.ts';
import { restoreKeys, type StoredKey } from './keyspace.ts';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1,1000,10000' },
    main: { type: 'string' },
  },
});
const fixture = loadFixture('0.1.0');
/** The recorded settings, events off (nothing is delivered here). */
const settings = Object.fromEntries(
  Object.entries(fixture.env).filter(([name]) => name !== 'EVENTS_WEBHOOK_SECRET'),
);
const sid = () => randomBytes(32).toString('base64url');
const indexKey = (key: string) => key.startsWith('baton:{stats}:connections:');

/** The fixture's keys of the previous layout, each with k - 1 more members under fresh sessions. */
function scaled(k: number): StoredKey[] {
  return fixture.keys.map((stored) => {
    if (stored.type === 'zset' && (indexKey(stored.key) || stored.key === 'baton:{events}:due')) {
      const copies = Array.from({ length: k - 1 }, () =>
        stored.value.map(({ member, score }) => ({
          member: indexKey(stored.key) ? `${sid()}:${member.split(':')[1]}` : sid(),
          score,
        })),
      );
      return { ...stored, value: [...stored.value, ...copies.flat()] };
    }
    if (stored.type === 'list' && stored.key === 'baton:{events}:dead') {
      const copies = Array.from({ length: k - 1 }, () =>
        stored.value.map((raw) => {
          const letter = JSON.parse(raw) as Record<string, unknown>;
          const ref = `ses_${randomBytes(16).toString('base64url').slice(0, 22)}`;
          return JSON.stringify({ ...letter, id: `msg_${sid().slice(0, 22)}`, session_ref: ref });
        }),
      );
      return { ...stored, value: [...stored.value, ...copies.flat()] };
    }
    return stored;
  });
}

const members = (keys: readonly StoredKey[], match: (key: string) => boolean) =>
  keys.filter(({ key }) => match(key)).reduce((sum, stored) => sum + size(stored), 0);

/** Members of a key: a hash's fields, a list's, set's or sorted set's entries, a string one. */
function size(stored: StoredKey): number {
  if (stored.type === 'string') return 1;
  if (stored.type === 'hash') return Object.keys(stored.value).length;
  return stored.value.length;
}

async function startUpMs(env: Record<string, string>): Promise<{ ms: number; lines: string[] }> {
  const started = performance.now();
  const broker = await BrokerProcess.start(env, ...(values.main ? [values.main] : []));
  const ms = performance.now() - started;
  await broker.stop();
  return { ms, lines: broker.lines };
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;

console.log('| scale | index members | scheduled sessions | dead letters | upgrade, ms |');
console.log('|---|---|---|---|---|');
for (const k of values.scale.split(',').map(Number)) {
  await using redis = await RedisServer.start();
  const client = createRedisClient(redis.url);
  await client.connect();
  const keys = scaled(k);
  await restoreKeys(client, keys, (key) => (indexKey(key) ? Date.now() - fixture.recordedAt : 0));
  const env = brokerEnv({
    providerUrl: fixture.sandboxUrl,
    publicUrl: fixture.publicUrl,
    redis: { REDIS_URL: redis.url },
    extra: settings,
  });
  const first = await startUpMs(env);
  const format = await client.get('baton:format');
  const again: number[] = [];
  for (let run = 0; run < 3; run++) again.push((await startUpMs(env)).ms);
  await client.close();
  const upgrade = first.ms - median(again);
  console.log(
    `| ${k} | ${members(keys, indexKey)} | ${members(keys, (key) => key === 'baton:{events}:due')} | ${members(keys, (key) => key === 'baton:{events}:dead')} | ${format === null ? 'no upgrade (no baton:format)' : Math.round(upgrade)} |`,
  );
}
