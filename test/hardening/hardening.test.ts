import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysWithoutTtl } from '../support/ledger.ts';
import { logWritten } from '../support/wait.ts';
import { describeCallback } from './callback.suite.ts';
import { describeKeyRotation } from './faults-keys.suite.ts';
import { describeLockFaults } from './faults-locks.suite.ts';
import { describeProviderFaults } from './faults-provider.suite.ts';
import { describeRedisFaults } from './faults-redis.suite.ts';
import { describeHandoff } from './handoff.suite.ts';
import { describeProxy } from './proxy.suite.ts';
import { describeRotations } from './rotations.suite.ts';
import { describeStart } from './start.suite.ts';
import { describeTokenAnswers } from './token-answers.suite.ts';
import { ledger, startSuite, stopSuite, suite } from './shared.ts';

/**
 * Baton's hardening suite: it attacks the broker, breaks its dependencies and runs it as several
 * instances. One file, so that one cluster, one ledger and one final grep cover all of it; each
 * threat or fault has its own `*.suite.ts` module, run from here and nowhere else.
 */
beforeAll(async () => {
  await startSuite();
});

afterAll(async () => {
  await stopSuite();
});

describeCallback();
describeStart();
describeHandoff();
describeProxy();
describeTokenAnswers();
describeRedisFaults();
describeProviderFaults();
describeLockFaults();
describeRotations();
describeKeyRotation();

describe('at the end of the suite', () => {
  it('no hostile input was accepted, no attacker was contacted, no connection was lost', () => {
    expect(ledger.hostileTried).toBeGreaterThan(0);
    expect(suite.cluster.attacker.connections).toBe(0);
    expect(ledger.accepted).toEqual([]);
    expect(ledger.lost).toEqual([]);
  });

  it('the sandbox only ever saw its own host, and paths under an api_url', () => {
    const requests = suite.cluster.everyUpstreamRequest();
    const host = new URL(suite.cluster.sandbox.url).host;
    expect(requests.length).toBeGreaterThan(10_000);
    expect(requests.filter((request) => request.host !== host)).toEqual([]);
    expect(
      requests.filter(
        (request) =>
          !/^\/licenses\/lic-\d{4}\/[^?]*(?:\?.*)?$/.test(request.path) ||
          /\/\.\.?(?:\/|$)|%2e|%2f|%5c|\\/i.test(request.path.split('?')[0]!),
      ),
    ).toEqual([]);
  });

  it('every key in every Redis carries a TTL', async () => {
    expect(await keysWithoutTtl(suite.cluster.redis.url)).toEqual([]);
    expect(await keysWithoutTtl(suite.trio.redis.url)).toEqual([]);
  });

  it('no canary (client secret, code, token) is in any captured log line or Redis value', async () => {
    // The cluster's brokers are still running: what they last logged must be out to be read.
    await Promise.all(suite.cluster.brokers.map(logWritten));
    const { found, secrets, logLines, values } = await ledger.canaries();
    expect(secrets).toBeGreaterThan(10);
    expect(logLines).toBeGreaterThan(1000);
    expect(values).toBeGreaterThan(0);
    expect(found).toEqual([]);
  });

  it('prints the counts', () => {
    console.log(ledger.summary());
    expect(ledger.hostileAccepted).toBe(0);
    expect(ledger.connectionsLost).toBe(0);
  });
});
