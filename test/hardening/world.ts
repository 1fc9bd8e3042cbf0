import { expect } from 'vitest';
import { Cluster } from '../support/cluster.ts';
import { captureConsole, Ledger } from '../support/ledger.ts';
import { Trio } from '../support/trio.ts';

/**
 * What the whole hardening suite shares: the three-process cluster, the in-process trio on an
 * injected clock, and the ledger that counts and greps. Started once by hardening.test.ts.
 */
export const ledger = new Ledger();

let cluster: Cluster | undefined;
let trio: Trio | undefined;
let console_: ReturnType<typeof captureConsole> | undefined;

export const world = {
  get cluster(): Cluster {
    if (!cluster) throw new Error('the cluster is not started');
    return cluster;
  },
  get trio(): Trio {
    if (!trio) throw new Error('the trio is not started');
    return trio;
  },
};

export async function startWorld(): Promise<void> {
  console_ = captureConsole();
  ledger.logs('test process console (sandboxes)', () => console_?.lines ?? []);
  [cluster, trio] = await Promise.all([
    Cluster.start(ledger),
    Trio.start(ledger, { tokenTimeoutMs: 400, refreshLeaseMs: 1200 }),
  ]);
}

export async function stopWorld(): Promise<void> {
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
