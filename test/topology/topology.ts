import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { useWorld, type RedisTopology, type World } from '../support/world.ts';

export const PUBLIC_URL = 'http://baton.topology.test';

/**
 * A world of three broker processes (as deployed) over `redis`, behind one public origin, for one
 * test file. Each broker's log is kept and its warnings printed if a test fails, since a Redis
 * topology problem shows there first.
 */
export function useTopology<R>(redis: RedisTopology<R>): World<R> {
  const world = useWorld({
    brokers: { processes: 3 },
    redis,
    publicUrl: PUBLIC_URL,
    // The lease as production sizes it (TOKEN_TIMEOUT_MS + 5 s). It must outlast a failover: a
    // holder whose rotated pair met the failover keeps the lock until it can store that pair,
    // and with 3 s here the lock ran out first under a loaded CI, another instance refreshed
    // with the used-up token, and the provider revoked the connection (the brokers' logs of
    // that run). A lease left behind by a release that met the failover runs out in 6.5 s.
    env: { TOKEN_TIMEOUT_MS: '1500', REFRESH_LEASE_MS: '6500' },
  });
  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    // The brokers' own account of a failed run, kept where CI keeps test results.
    const dir = fileURLToPath(new URL('../../test-results/topology/', import.meta.url));
    await mkdir(dir, { recursive: true });
    const file = join(dir, `${context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.log`);
    const { processes } = world;
    await writeFile(
      file,
      processes.map((broker, i) => [`--- broker ${i} ---`, ...broker.lines].join('\n')).join('\n'),
    );
    // CI shows the output, not the files: the warnings and errors go there too.
    const notable = processes.flatMap((broker, i) =>
      broker.lines.filter((line) => /"level":[456]0/.test(line)).map((line) => `${i}: ${line}`),
    );
    console.log(
      `[topology] broker logs of the failed test: ${file}\n${notable.slice(-80).join('\n')}`,
    );
  });
  return world;
}
