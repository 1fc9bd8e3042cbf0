import type { RunningSandbox } from '@baton/sandbox';
import { routes } from '@baton/shared';
import { execFile } from 'node:child_process';
import { chmod } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';
import {
  BalancedClient,
  PRODUCTION_SECRETS,
  productionEnv,
  productionFlow,
  startTlsProvider,
  type TlsProvider,
} from '../support/public-flow.ts';
import { RedisServer } from '../support/redis.ts';
import { CLIENT_SECRET } from '../support/world.ts';
import type { TestCertificate, TlsTerminator } from '../support/tls.ts';
import { until, untilLogWritten } from '../support/wait.ts';
import { BUILD_ARGS, docker, IMAGE, ROOT } from './docker.ts';

/**
 * server/Dockerfile, built by the suite's global setup, run as an operator would: `--network host`
 * only (every address stays on loopback), a real redis-server, the sandbox behind TLS, and the
 * production environment alone.
 */
const { SESSION_SECRET, TOKEN_ENCRYPTION_KEYS: KEY } = PRODUCTION_SECRETS;
const CA_IN_CONTAINER = '/run/baton/test-ca.pem';

let certificate: TestCertificate;
let redis: RedisServer;
let sandbox: RunningSandbox;
let tls: TlsTerminator;
let closeProvider: (() => Promise<void>) | undefined;
const containers: string[] = [];

beforeAll(async () => {
  let provider: TlsProvider;
  [provider, redis] = await Promise.all([startTlsProvider(), RedisServer.start()]);
  ({ certificate, sandbox, tls, close: closeProvider } = provider);
  // The container runs as uid 1000: the (public) test certificate must be readable to it.
  await chmod(certificate.certFile, 0o644);
});

afterAll(async () => {
  for (const name of containers) await docker(['rm', '--force', name]).catch(() => {});
  await closeProvider?.();
  await redis?.[Symbol.asyncDispose]();
});

const env = (port: number): Record<string, string> => ({
  ...productionEnv({ providerUrl: tls.url, redisUrl: redis.url, caFile: CA_IN_CONTAINER }),
  HOST: '127.0.0.1',
  PORT: String(port),
});

const envArgs = (env: Record<string, string>): string[] =>
  Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`]);

/** The image, started detached on the host's network; resolves once /readyz answers 200. */
async function startContainer(extra: Record<string, string> = {}) {
  const port = await freePort();
  const name = `baton-image-test-${port}`;
  containers.push(name);
  await docker([
    'run',
    '--detach',
    '--name',
    name,
    '--network',
    'host',
    // The image's HEALTHCHECK, probed every second here so that the test need not wait 30 s.
    '--health-interval',
    '1s',
    '--health-timeout',
    '2s',
    '--health-retries',
    '2',
    '--health-start-period',
    '0s',
    '--volume',
    `${certificate.certFile}:${CA_IN_CONTAINER}:ro`,
    ...envArgs({ ...env(port), ...extra }),
    IMAGE,
  ]);
  const url = `http://127.0.0.1:${port}`;
  await until(
    () =>
      fetch(`${url}${routes.readyz}`).then(
        (response) => response.ok,
        () => false,
      ),
    { deadlineMs: 30_000, what: `the container ${name} to be ready` },
  );
  return {
    name,
    url,
    logs: () => docker(['logs', name]).catch((error: unknown) => String(error)),
    health: () => docker(['inspect', '--format', '{{.State.Health.Status}}', name]),
    exec: (...command: string[]) =>
      promisify(execFile)('docker', ['exec', name, ...command]).then(
        ({ stdout }) => ({ code: 0, stdout: stdout.trim() }),
        (error: { code?: number; stdout?: string }) => ({
          code: error.code ?? 1,
          stdout: (error.stdout ?? '').trim(),
        }),
      ),
  };
}

describe('the broker image', () => {
  it('runs the whole flow over https, as the unprivileged node user, on code it cannot change', async () => {
    const container = await startContainer();
    const client = new BalancedClient(container.url, certificate.cert);
    try {
      const session = await productionFlow(client, sandbox, tls.url);
      expect(await container.exec('id', '-u')).toEqual({ code: 0, stdout: '1000' });
      expect((await container.exec('sh', '-c', 'test -w /app/dist/main.js')).code).not.toBe(0);
      expect((await container.exec('touch', '/app/dist/planted.js')).code).not.toBe(0);
      expect((await container.exec('touch', '/app/node_modules/planted.js')).code).not.toBe(0);
      await untilLogWritten(container.url, async (marker) =>
        (await container.logs()).includes(marker),
      );
      const log = await container.logs();
      expect(log).toContain('broker listening');
      expect(log).not.toContain('DEVELOPMENT SETUP');
      for (const secret of [CLIENT_SECRET, SESSION_SECRET, KEY.slice(3), session.session_token])
        expect(log).not.toContain(secret);
    } finally {
      await client.close();
    }
  });

  it('refuses a production configuration that lacks its variables, naming every one', async () => {
    const { code, output } = await promisify(execFile)(
      'docker',
      ['run', '--rm', '--network', 'host', '--env', 'NODE_ENV=production', IMAGE],
      { timeout: 60_000 },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code,
        output: (error.stdout ?? '') + (error.stderr ?? ''),
      }),
    );
    expect(code).toBe(1);
    for (const name of [
      'AUTH_URL',
      'CLIENT_SECRET',
      'PUBLIC_URL',
      'SESSION_SECRET',
      'TOKEN_ENCRYPTION_KEYS',
    ])
      expect(output).toContain(`${name} is required when NODE_ENV=production`);
  });

  it('reports healthy, then unhealthy while Redis is down, then healthy again', async () => {
    const container = await startContainer();
    await until(async () => (await container.health()) === 'healthy', {
      deadlineMs: 30_000,
      what: 'the HEALTHCHECK to report healthy',
    });
    await redis.stop();
    try {
      await until(async () => (await container.health()) === 'unhealthy', {
        deadlineMs: 30_000,
        what: 'the HEALTHCHECK to report unhealthy with Redis stopped',
      });
      // Alive all the while: nothing restarts it, and /healthz still answers.
      expect((await fetch(`${container.url}${routes.healthz}`)).status).toBe(200);
    } finally {
      await redis.start();
    }
    await until(async () => (await container.health()) === 'healthy', {
      deadlineMs: 30_000,
      what: 'the HEALTHCHECK to report healthy once Redis is back',
    });
  });

  it('drains an answer in flight on docker stop (SIGTERM), and exits 0 within the grace period', async () => {
    const container = await startContainer({
      SHUTDOWN_DELAY_MS: '0',
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    const client = new BalancedClient(container.url, certificate.cert);
    try {
      const session = await productionFlow(client, sandbox, tls.url);
      // The flow above called users.me already: wait for one more, the slow one.
      const calls = () =>
        sandbox.sandbox.control.requests().filter((r) => r.path.endsWith('/users.me')).length;
      const before = calls();
      sandbox.sandbox.control.addFault({ target: 'api', kind: 'latency', ms: 1500, count: 1 });
      const inFlight = client.toBroker(routes.proxy(session.connection.id, 'users.me'), {
        headers: { authorization: `Bearer ${session.session_token}` },
      });
      await until(() => calls() > before, {
        deadlineMs: 10_000,
        what: 'the slow call to reach the provider',
      });
      const started = performance.now();
      await docker(['stop', '--time', '20', container.name], { timeoutMs: 30_000 });
      const stoppedInMs = performance.now() - started;
      expect((await inFlight).status).toBe(200);
      expect(await docker(['inspect', '--format', '{{.State.ExitCode}}', container.name])).toBe(
        '0',
      );
      expect(stoppedInMs).toBeLessThan(20_000);
      expect(await container.logs()).toMatch(/shut ?down|draining|stopped/i);
    } finally {
      await client.close();
    }
  });
});

describe('server/compose.yaml', () => {
  const compose = (env: Record<string, string>) =>
    promisify(execFile)('docker-compose', ['-f', 'server/compose.yaml', 'config'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
    }).then(
      ({ stdout }) => ({ code: 0, output: stdout }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code ?? 1,
        output: (error.stdout ?? '') + (error.stderr ?? ''),
      }),
    );
  const required = {
    AUTH_URL: 'https://auth.example.com',
    CLIENT_ID: 'client',
    API_URL_ALLOWLIST: 'https://*.api.example.com',
    EXTENSION_REDIRECT_URLS: 'https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/',
    BATON_DOMAIN: 'broker.example.com',
    BATON_VERSION: BUILD_ARGS.VERSION,
    BATON_REVISION: BUILD_ARGS.REVISION,
    BATON_SOURCE: BUILD_ARGS.SOURCE,
  };

  it('is valid with the required variables, and names one that is missing', async () => {
    const valid = await compose(required);
    expect(valid.code).toBe(0);
    expect(valid.output).toContain('PUBLIC_URL: https://broker.example.com');
    // Every secret is a file compose mounts, read through *_FILE; none is a value in the
    // environment, where `docker inspect` would show it. Redis has a password.
    for (const name of [
      'client_secret',
      'session_secret',
      'token_encryption_keys',
      'redis_password',
    ])
      expect(valid.output).toContain(`${name.toUpperCase()}_FILE: /run/secrets/${name}`);
    expect(valid.output).not.toMatch(
      /^\s+(CLIENT_SECRET|SESSION_SECRET|TOKEN_ENCRYPTION_KEYS|REDIS_PASSWORD|METRICS_TOKEN|EVENTS_WEBHOOK_SECRET):/m,
    );
    expect(valid.output).toContain('requirepass');
    // The image built from it says what it is (its labels, baton_build_info).
    expect(valid.output).toContain(`REVISION: ${BUILD_ARGS.REVISION}`);
    const missing = Object.fromEntries(
      Object.entries(required).filter(([name]) => name !== 'AUTH_URL'),
    );
    const invalid = await compose(missing);
    expect(invalid.code).not.toBe(0);
    expect(invalid.output).toContain('set AUTH_URL');
  });

  it('passes a variable it does not list by name through to the broker', async () => {
    const { output } = await compose({ ...required, SESSION_MAX_AGE: '86400' });
    expect(output).toContain("SESSION_MAX_AGE: '86400'");
  });
});
