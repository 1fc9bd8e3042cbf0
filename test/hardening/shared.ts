import { expect } from 'vitest';
import { captureConsole, Ledger } from '../support/ledger.ts';
import { CLIENT_SECRET, startWorld, type World } from '../support/world.ts';
import { Cluster } from './cluster.ts';

/** The public origin of the trio's three brokers. */
export const TRIO_PUBLIC_URL = 'http://baton.trio.test';

/**
 * What the whole hardening suite shares: the three-process cluster, the trio (three brokers in
 * this process, each with its own Redis client and single flight, so that only Redis coordinates
 * them, as between processes, all on one injected clock for what must be decided by time without
 * waiting for it), and the ledger that counts and greps. Started once by hardening.test.ts.
 */
export const ledger = new Ledger();

let cluster: Cluster | undefined;
let trio: World | undefined;
let console_: ReturnType<typeof captureConsole> | undefined;

export const suite = {
  get cluster(): Cluster {
    if (!cluster) throw new Error('the cluster is not started');
    return cluster;
  },
  get trio(): World {
    if (!trio) throw new Error('the trio is not started');
    return trio;
  },
};

async function startTrio(): Promise<World> {
  const world = await startWorld({
    brokers: { inProcess: 3 },
    publicUrl: TRIO_PUBLIC_URL,
    env: { TOKEN_TIMEOUT_MS: '400', REFRESH_LEASE_MS: '1200' },
    onStart: (name, lines) => ledger.logs(`trio ${name}`, lines),
  });
  ledger.logs('trio redis-server', () => world.redis.lines);
  ledger.redis('trio', world.redis.url);
  ledger.secrets(() => [...world.control.secrets(), CLIENT_SECRET]);
  return world;
}

export async function startSuite(): Promise<void> {
  console_ = captureConsole();
  ledger.logs('test process console (sandboxes)', () => console_?.lines ?? []);
  [cluster, trio] = await Promise.all([Cluster.start(ledger), startTrio()]);
}

export async function stopSuite(): Promise<void> {
  await cluster?.close();
  await trio?.close();
  console_?.restore();
}

/**
 * Records one hostile input in the ledger and fails the test when any invariant broke. `checks`
 * maps each invariant to whether it held.
 */
export function verdict(name: string, checks: Record<string, boolean>): void {
  const broken = Object.entries(checks)
    .filter(([, held]) => !held)
    .map(([invariant]) => invariant);
  ledger.hostile(name, broken.length > 0);
  expect(broken, `${name}: invariants that broke`).toEqual([]);
}
