import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildDeployedFolder,
  DeployedBroker,
  runDeployed,
  type DeployedFolder,
} from '../support/deploy.ts';
import {
  BalancedClient,
  PRODUCTION_SECRETS,
  productionEnv,
  productionFlow,
  PUBLIC_URL,
} from '../support/public-flow.ts';
import { freePort } from '../support/ports.ts';
import { logWritten } from '../support/wait.ts';
import { CLIENT_SECRET, useWorld } from '../support/world.ts';

/**
 * The deployable folder, as an operator runs it: built by `deploy:folder` into a temp dir, started
 * with `NODE_ENV=production node dist/main.js` and only the environment given here. Production
 * insists on https, so the sandbox sits behind a TLS-terminating loopback proxy with a
 * certificate made for this run (trusted by the broker through NODE_EXTRA_CA_CERTS), and the test
 * client plays the load balancer in front of the broker (PUBLIC_URL https, TRUST_PROXY=1,
 * X-Forwarded-Proto: https).
 */
const { SESSION_SECRET, TOKEN_ENCRYPTION_KEYS: KEY } = PRODUCTION_SECRETS;

const world = useWorld({ brokers: { processes: 0 }, tls: true, publicUrl: PUBLIC_URL });
let folder: DeployedFolder;

beforeAll(async () => {
  folder = await buildDeployedFolder();
}, 120_000);

afterAll(async () => {
  await folder?.[Symbol.asyncDispose]();
});

const env = (): Record<string, string> =>
  productionEnv({
    providerUrl: world.providerUrl,
    redisUrl: world.redis.url,
    caFile: world.tls.certificate.certFile,
  });

describe('the deployable folder in production', () => {
  it('runs the whole flow over https: start, approve, callback, POST /session, proxied users.me', async () => {
    await using broker = await DeployedBroker.start(folder.dir, env());
    const client = new BalancedClient(broker.url, world.tls.certificate.cert);
    try {
      const session = await productionFlow(client, world.sandbox, world.providerUrl);

      // The operator CLI ships in the folder too, and runs on the same environment.
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(folder.dir, 'dist/admin.js'), 'stats'],
        { env: { PATH: process.env.PATH ?? '', ...env() } },
      );
      expect(JSON.parse(stdout)).toMatchObject({
        sessions: 1,
        connections: { byStatus: { connected: 1 }, byKeyId: { k1: 1 } },
      });

      await logWritten(broker);
      const log = broker.lines.join('\n');
      expect(log).not.toContain('DEVELOPMENT SETUP');
      for (const secret of [CLIENT_SECRET, SESSION_SECRET, KEY.slice(3), session.session_token])
        expect(log).not.toContain(secret);
    } finally {
      await client.close();
    }
  });

  it("serves the admin console from the folder's dist/static/ on the admin port, with its strict CSP", async () => {
    const tokens = join(folder.dir, '..', 'admin-tokens.json');
    const token = randomBytes(24).toString('hex');
    const sha256 = createHash('sha256').update(token).digest('hex');
    await writeFile(tokens, JSON.stringify([{ name: 'deploy-test', role: 'viewer', sha256 }]));
    const adminPort = await freePort();
    await using broker = await DeployedBroker.start(folder.dir, {
      ...env(),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKENS_FILE: tokens,
    });
    const admin = `http://127.0.0.1:${adminPort}`;
    const page = await fetch(`${admin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console.js"></script>');
    for (const asset of ['/console.js', '/console.css', '/console/api.js']) {
      const answer = await fetch(`${admin}${asset}`);
      expect(answer.status, asset).toBe(200);
      expect((await answer.text()).length, asset).toBeGreaterThan(100);
    }
    const whoami = await fetch(`${admin}/api/v1/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await whoami.json()).toEqual({ name: 'deploy-test', role: 'viewer' });
    // The public port knows none of it.
    const client = new BalancedClient(broker.url, world.tls.certificate.cert);
    try {
      expect((await client.toBroker('/console.js')).status).toBe(404);
    } finally {
      await client.close();
    }
  });

  it('refuses to start without its variables, naming every one (the embedded store included)', async () => {
    const run = runDeployed(folder.dir, { NODE_ENV: 'production' });
    expect(await run.exited).toBe(1);
    const output = run.lines.join('\n');
    for (const name of Object.keys(env()).filter(
      (name) => !['NODE_ENV', 'TRUST_PROXY', 'NODE_EXTRA_CA_CERTS', 'REDIS_URL'].includes(name),
    ))
      expect(output).toContain(`${name} is required when NODE_ENV=production`);
    expect(output).toContain(
      'REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required when NODE_ENV=production',
    );
  });

  it('refuses plain http for PUBLIC_URL and the API allowlist, naming both', async () => {
    const run = runDeployed(folder.dir, {
      ...env(),
      PUBLIC_URL: 'http://broker.baton.test',
      API_URL_ALLOWLIST: world.sandbox.url,
    });
    expect(await run.exited).toBe(1);
    const output = run.lines.join('\n');
    expect(output).toContain('PUBLIC_URL must be https in production');
    expect(output).toContain('API_URL_ALLOWLIST entries must be https in production');
  });
});
