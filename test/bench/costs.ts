/**
 * What each thing a user does costs Redis, in commands (INFO commandstats), on a real Redis and an
 * in-process broker on the injected clock: counts, not timings, so they hold on any host
 * (docs/capacity.md builds its model from them, S6 and S1):
 *
 *   node test/bench/costs.ts [--users 50]
 *
 * Each user signs in and connects two licenses; calls twice on each (the second from the broker's
 * cache); calls on each through a broker with an empty cache; calls again as the access tokens
 * near their end (one refresh each), and as the session's hour is up (its renewal); signs out.
 */
import { routes } from '@baton/shared';
import { createClient } from 'redis';
import { parseArgs } from 'node:util';
import { call, connect } from '../support/flow.ts';
import { startWorld } from '../support/world.ts';

const { values } = parseArgs({ options: { users: { type: 'string', default: '50' } } });
const USERS = Number(values.users);
const MINUTE = 60 * 1000;
const HOUR = 60 * MINUTE;

await using world = await startWorld({});
const redis = createClient({ url: world.redis.url });
await redis.connect();
const [first, second] = world.sandbox.sandbox.accounts[0]!.licenses;

/** Every command Redis has run, by name (INFO and the survey's own excluded). */
async function commands(): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const counts = new Map<string, number>();
  for (const [, name = '', calls] of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g))
    if (name !== 'info') counts.set(name, Number(calls));
  return counts;
}

const rows: { step: string; per: string; commands: number; which: string }[] = [];

/** Runs `step` and records the commands it made, divided by `count` (`per` names one). */
async function measure(step: string, per: string, count: number, run: () => Promise<void>) {
  const before = await commands();
  await run();
  const after = await commands();
  const delta = [...after]
    .map(([name, calls]) => [name, calls - (before.get(name) ?? 0)] as const)
    .filter(([, calls]) => calls > 0)
    .sort((a, b) => b[1] - a[1]);
  const total = delta.reduce((sum, [, calls]) => sum + calls, 0);
  rows.push({
    step,
    per,
    commands: total / count,
    which: delta.map(([name, calls]) => `${name} ${(calls / count).toFixed(2)}`).join(', '),
  });
}

const users: { token: string; ids: string[] }[] = [];
await measure(
  'sign in and connect two licenses (the whole flow, twice)',
  'user',
  USERS,
  async () => {
    for (let i = 0; i < USERS; i++) {
      const one = await connect(world, { licenseId: first!.id });
      const two = await connect(world, { licenseId: second!.id, sessionToken: one.session_token });
      users.push({ token: one.session_token, ids: [one.connection.id, two.connection.id] });
    }
  },
);

const callAll = async (url: string) => {
  for (const { token, ids } of users)
    for (const id of ids) {
      const response = await fetch(new URL(routes.proxy(id, 'users.me'), url), {
        headers: { authorization: `Bearer ${token}` },
      });
      if (response.status !== 200) throw new Error(`a call answered ${response.status}`);
      await response.arrayBuffer();
    }
};
const calls = USERS * 2;
await callAll(world.broker.url);
await measure('a call, session and record in the cache', 'call', calls, () =>
  callAll(world.broker.url),
);
// A broker whose cache holds two answers (and admits one session): nearly every call misses, as
// calls over far more sessions than the cache holds do (S6 at 100,000).
const small = await world.startBroker({ REDIS_CACHE_ENTRIES: '2' });
// Until its heartbeat (every 250 ms) has been answered once, a broker trusts no copy and reads
// everything plainly: counted after it, as a running broker's calls are.
await new Promise((resolve) => setTimeout(resolve, 600));
await measure('a call, the session not yet seen by this broker', 'call', calls, () =>
  callAll(small.url),
);
await measure('a call, the session known but out of the cache (a miss)', 'call', calls, () =>
  callAll(small.url),
);
// Four minutes before the access tokens end: inside the refresh margin, within the hour that
// spares the session a renewal.
world.clock.advance(HOUR - 4 * MINUTE);
await measure('a call that refreshes its connection first (proactively)', 'refresh', calls, () =>
  callAll(world.broker.url),
);
// Five minutes on: the session's hour is up (renewed at most hourly), the tokens fresh.
world.clock.advance(5 * MINUTE);
await measure('a call that renews its session (at most one an hour)', 'call', calls, () =>
  callAll(world.broker.url),
);
await measure('sign out', 'user', USERS, async () => {
  for (const { token } of users) {
    const response = await call(world, routes.session, token, { method: 'DELETE' });
    if (response.status !== 204) throw new Error(`sign-out answered ${response.status}`);
  }
});
await redis.close();

console.log(
  `Redis commands per step, ${USERS} users of two licenses each (node test/bench/costs.ts)\n`,
);
console.log('| step | commands | per | which |\n|---|---|---|---|');
for (const row of rows)
  console.log(`| ${row.step} | ${row.commands.toFixed(2)} | ${row.per} | ${row.which} |`);
