import { startSandbox, type RunningSandbox, type SandboxControl } from '@baton/sandbox';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { Client } from '../support/client.ts';
import { BrokerProcess } from '../support/process.ts';
import { brokerEnv } from '../support/broker-env.ts';
import { CLIENT_ID, CLIENT_SECRET } from '../support/stack.ts';
import { until } from '../support/wait.ts';

export const PUBLIC_URL = 'http://baton.topology.test';

/** A Redis deployment of the test's own: how brokers reach it, and how to stop it. */
export interface Deployment {
  /** REDIS_SENTINEL or REDIS_CLUSTER_NODES (and anything else the mode wants). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export interface TopologyWorld<D extends Deployment> {
  readonly redis: D;
  /** Every broker's environment (for the admin CLI, say). */
  readonly env: Record<string, string>;
  readonly brokers: readonly BrokerProcess[];
  readonly control: SandboxControl;
  /** A client from an address of its own, reaching every instance behind one public origin. */
  client(): Client;
  /** Resolves once every instance answers /readyz with 200 (after a failover, say). */
  ready(deadlineMs?: number): Promise<void>;
}

/**
 * Three broker processes (as deployed) over a Redis deployment of `start`'s making, and the
 * sandbox, for one test file; everything stops after it. Each broker's log is printed if a test
 * fails, since a Redis topology problem shows there first.
 */
export function useTopologyWorld<D extends Deployment>(start: () => Promise<D>): TopologyWorld<D> {
  let redis: D | undefined;
  let sandbox: RunningSandbox | undefined;
  const brokers: BrokerProcess[] = [];
  let env: Record<string, string> | undefined;
  beforeAll(async () => {
    redis = await start();
    sandbox = await startSandbox({ control: true, clients: [] });
    sandbox.sandbox.control.registerClient({
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [`${PUBLIC_URL}/auth/callback`],
    });
    env = brokerEnv({
      providerUrl: sandbox.url,
      publicUrl: PUBLIC_URL,
      redis: redis.env,
      // The lease as production sizes it (TOKEN_TIMEOUT_MS + 5 s). It must outlast a failover: a
      // holder whose rotated pair met the failover keeps the lock until it can store that pair,
      // and with 3 s here the lock ran out first under a loaded CI, another instance refreshed
      // with the used-up token, and the provider revoked the connection (the brokers' logs of
      // that run). A lease left behind by a release that met the failover runs out in 6.5 s.
      extra: { TOKEN_TIMEOUT_MS: '1500', REFRESH_LEASE_MS: '6500' },
    });
    const each = env;
    brokers.push(...(await Promise.all([0, 1, 2].map(() => BrokerProcess.start(each)))));
  });
  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    // The brokers' own account of a failed run, kept where CI keeps test results.
    const dir = fileURLToPath(new URL('../../test-results/topology/', import.meta.url));
    await mkdir(dir, { recursive: true });
    const file = join(dir, `${context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.log`);
    await writeFile(
      file,
      brokers.map((broker, i) => [`--- broker ${i} ---`, ...broker.lines].join('\n')).join('\n'),
    );
    // CI shows the output, not the files: the warnings and errors go there too.
    const notable = brokers.flatMap((broker, i) =>
      broker.lines.filter((line) => /"level":[456]0/.test(line)).map((line) => `${i}: ${line}`),
    );
    console.log(
      `[topology] broker logs of the failed test: ${file}\n${notable.slice(-80).join('\n')}`,
    );
  });
  afterAll(async () => {
    for (const broker of brokers) await broker.stop('SIGKILL');
    await sandbox?.close();
    await redis?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the topology world is not started yet');
    return value;
  };
  return {
    get redis() {
      return started(redis);
    },
    get env() {
      return started(env);
    },
    brokers,
    get control() {
      return started(sandbox).sandbox.control;
    },
    client: () =>
      new Client({ publicUrl: PUBLIC_URL, instances: brokers.map((broker) => broker.url) }),
    async ready(deadlineMs = 20_000) {
      await until(
        async () => {
          const statuses = await Promise.all(
            brokers.map((broker) =>
              fetch(`${broker.url}/readyz`).then(
                (response) => response.status,
                () => 0,
              ),
            ),
          );
          return statuses.every((status) => status === 200);
        },
        { deadlineMs, what: 'every broker to be ready' },
      );
    },
  };
}
