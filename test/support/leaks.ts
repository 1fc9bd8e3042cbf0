import { createClient } from 'redis';
import { expect } from 'vitest';
import { surveyStorage } from './storage-keys.ts';
import type { World } from './world.ts';

/** Every value in Redis, whatever its type, as text. */
export async function dumpRedis(url: string): Promise<string[]> {
  const client = createClient({ url });
  await client.connect();
  try {
    const values: string[] = [];
    for await (const batch of client.scanIterator({ COUNT: 500 })) {
      for (const key of batch) {
        const type = await client.type(key);
        if (type === 'string') values.push(`${key} ${(await client.get(key)) ?? ''}`);
        else if (type === 'hash')
          values.push(`${key} ${JSON.stringify(await client.hGetAll(key))}`);
        else if (type === 'set') values.push(`${key} ${(await client.sMembers(key)).join(' ')}`);
        else values.push(`${key} <${type}>`);
      }
    }
    return values;
  } finally {
    await client.close();
  }
}

/**
 * No secret the sandbox ever issued or knows (client secret, codes, tokens) appears in Redis or in
 * the log of any broker in process. Checks it found something to look for, so it cannot pass on no
 * data. Every key left in Redis is documented (docs/architecture.md's storage keys) and has a TTL.
 */
export async function expectNoLeaks(
  world: World<{ url: string }>,
  extra: string[] = [],
): Promise<void> {
  const secrets = [...world.control.secrets(), ...extra];
  expect(secrets.length).toBeGreaterThan(0);
  const haystacks = [
    ...(await dumpRedis(world.redis.url)),
    ...world.brokers.flatMap((broker) => broker.logs.lines),
  ];
  expect(haystacks.length).toBeGreaterThan(0);
  for (const secret of secrets) {
    const found = haystacks.find((text) => text.includes(secret));
    expect(found, `a secret (${secret.slice(0, 12)}…) leaked`).toBeUndefined();
  }
  // And every key the flows left is on docs/architecture.md's list, with a TTL.
  expect((await surveyStorage(world.redis.url)).problems).toEqual([]);
}
