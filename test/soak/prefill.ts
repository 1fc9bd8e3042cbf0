/**
 * Redis filled with sessions before the soak's users come, written by the broker's own code as
 * S6 writes its sessions (test/bench/s6.ts: `composeServices` over the soak's Redis, with the
 * brokers' configuration, so with their TTLs, sealing and index writes): a session and one
 * connection each, its tokens from a small pool of real grants (those sessions stay idle: no
 * call, no refresh). The first `adopt` of them each get a grant of their own, and the soak's
 * users start from them: a sample among the prefilled sessions, refreshed, called, signed out.
 */
import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import {
  composeServices,
  createLogger,
  createRedis,
  loadConfig,
  StoreUnavailableError,
  storeDeps,
} from '@baton/server';
import { sandboxGrant, type Grant } from '../support/sandbox-grant.ts';
import type { License } from './history.ts';
import { SOAK_PUBLIC_URL, type SoakSystem } from './system.ts';
import { LICENSES } from './user-requests.ts';

/** A prefilled session a soak user starts from. */
export interface Adopted {
  token: string;
  connectionId: string;
  license: License;
  /** The code of its grant (the tap's chain). */
  code: string;
}

/** Real grants per license that the idle sessions share. */
const POOL = 20;
/** Sessions written at once. */
const WORKERS = 256;

export async function prefillSessions(
  system: SoakSystem,
  options: { sessions: number; adopt: number; log: (line: string) => void },
): Promise<Adopted[]> {
  const { log } = options;
  const config = loadConfig(system.world.env);
  if (!config.redis.topology) throw new Error('the soak runs on Redis');
  const redis = createRedis(config.redis.topology, { cacheEntries: 0 });
  redis.client.on('error', () => {});
  await redis.client.connect();
  const dispatcher = new Agent({ connections: 16 });
  try {
    // No WAIT: these sessions are the setting, not what is checked (their replicas catch up).
    const { store } = storeDeps(redis);
    const services = composeServices({ config, store, dispatcher, log: createLogger('warn') });
    const control = system.world.control;
    const grant = (license: License): Promise<Grant> =>
      sandboxGrant({
        providerUrl: system.tap.url,
        apiUrl: `${system.tap.url}/licenses/${license}`,
        redirectUri: `${SOAK_PUBLIC_URL}/auth/callback`,
        dispatcher,
      });
    const pools = new Map<License, Grant[]>();
    const adopted: { license: License; grant: Grant }[] = [];
    try {
      for (const license of LICENSES) {
        control.setConsent({ mode: 'approve', licenseId: license });
        const pool: Grant[] = [];
        for (let i = 0; i < POOL; i++) pool.push(await grant(license));
        pools.set(license, pool);
      }
      for (let i = 0; i < options.adopt; i++) {
        const license = LICENSES[i % LICENSES.length]!;
        control.setConsent({ mode: 'approve', licenseId: license });
        adopted.push({ license, grant: await grant(license) });
      }
    } finally {
      // The users answer the provider's pages themselves.
      control.setConsent({ mode: 'interactive' });
    }

    const made: Adopted[] = [];
    let next = 0;
    let retried = 0;
    const started = performance.now();
    const one = async (index: number): Promise<void> => {
      const own = adopted[index];
      const license = own?.license ?? LICENSES[index % LICENSES.length]!;
      const tokens = own?.grant ?? pools.get(license)![index % POOL]!;
      for (;;) {
        try {
          const { token, sid } = await services.sessions.create();
          const record = {
            id: randomBytes(16).toString('base64url'),
            apiUrl: `${system.tap.url}/licenses/${license}`,
            status: 'connected' as const,
            connectedAt: Date.now(),
            tokens,
          };
          if (!(await services.connections.save(sid, record, 0)))
            throw new Error('prefill: a new connection record could not be saved');
          if (own) {
            const code = system.tap.chainOf.get(own.grant.refreshToken);
            if (code === undefined) throw new Error('prefill: the tap never saw that grant issued');
            made.push({ token, connectionId: record.id, license, code });
          }
          return;
        } catch (error) {
          // Redis stalled for a second under the load: counted, and the session made again.
          if (!(error instanceof StoreUnavailableError)) throw error;
          retried++;
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(WORKERS, options.sessions) }, async () => {
        while (next < options.sessions) {
          const index = next++;
          await one(index);
          if ((index + 1) % 50_000 === 0)
            log(
              `  prefill: ${index + 1} of ${options.sessions} sessions (${Math.round((index + 1) / ((performance.now() - started) / 1000))}/s)`,
            );
        }
      }),
    );
    log(
      `prefill: ${options.sessions} sessions in ${Math.round((performance.now() - started) / 1000)} s (${retried} written again), ${made.length} for the users`,
    );
    return made;
  } finally {
    await dispatcher.close();
    await redis.client.close();
  }
}
