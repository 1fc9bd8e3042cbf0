import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  broker,
  containerEnv,
  find,
  oldSpaceMiB,
  portNumber,
  render,
  type Container,
  type KubeObject,
  type PodSpec,
} from '../support/kubernetes.ts';
import { freePort } from '../support/ports.ts';
import { RedisServer } from '../support/redis.ts';
import { until } from '../support/wait.ts';
import {
  createdSecrets,
  kubectlCommands,
  readDoc,
  section,
  secretData,
  shellBlocks,
} from '../kubernetes/documented.ts';
import { docker, IMAGE } from './docker.ts';

/**
 * The image run as deploy/kubernetes/'s development overlay says, rendered by `kubectl kustomize`:
 * its command and working directory, its environment (ConfigMap and env), its user, group and
 * fsGroup, a read-only root with the emptyDir volumes as tmpfs, no capability, no privilege
 * escalation, its memory limit (and the heap the image's entrypoint sizes from it), and the
 * Secret's files bind-mounted where the volume puts them, with the volume's mode. Then its probes, at the manifest's paths, follow Redis.
 *
 * What differs, because the container shares the host's network (`--network host`, as every
 * container here): PORT and METRICS_PORT move to free ports (and the probes with them, since
 * they name the container's ports), HOST is loopback, and REDIS_URL is this test's Redis rather
 * than the overlay's `baton-redis` Service.
 *
 * The production-sentinel overlay's pod runs too, on Secrets made as docs/operations.md's
 * `kubectl create secret` commands make them (no Secret is in that overlay: the operator makes
 * them), against a Redis and a sentinel that want the passwords those Secrets carry. REDIS_SENTINEL
 * names this test's sentinel, under the overlay's master name.
 */

/** What the suite's image was built from (its global setup). */
const BUILD_ARGS = inject('imageBuildArgs');
const OVERLAY = 'development';

let objects: KubeObject[];
let redis: RedisServer;
const secretsDirs: string[] = [];
const containers: string[] = [];

beforeAll(async () => {
  [objects, redis] = await Promise.all([render(OVERLAY), RedisServer.start()]);
});

afterAll(async () => {
  for (const name of containers) await docker(['rm', '--force', name]).catch(() => {});
  for (const dir of secretsDirs) await rm(dir, { recursive: true, force: true });
  await redis?.[Symbol.asyncDispose]();
});

/** Docker's spelling of a Kubernetes memory quantity (Mi, Gi). */
const dockerBytes = (quantity: string): string => {
  const found = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (found === null) throw new Error(`unexpected quantity ${quantity}`);
  return `${found[1]}${found[2] === 'Mi' ? 'm' : 'g'}`;
};

/** The data of each Secret a pod may mount, by the Secret's name. */
type Secrets = Map<string, Record<string, Buffer>>;

/** The Secrets of the rendered objects (the development overlay generates its own). */
const renderedSecrets = (rendered: KubeObject[]): Secrets =>
  new Map(
    rendered
      .filter((each) => each.kind === 'Secret')
      .map((each) => [
        each.metadata.name,
        Object.fromEntries(
          Object.entries(each.data ?? {}).map(([key, value]) => [
            key,
            Buffer.from(value, 'base64'),
          ]),
        ),
      ]),
  );

/**
 * The Secret volume as the kubelet lays it out: one file per key (or per `items` entry, at its
 * path), owned by root and the pod's fsGroup, with the volume's defaultMode. A Secret or a key the
 * volume names and the Secrets lack fails, as the kubelet would fail to mount it.
 */
async function secretFiles(pod: PodSpec, volumeName: string, secrets: Secrets): Promise<string> {
  const volume = pod.volumes?.find((each) => each.name === volumeName) as
    | {
        secret: {
          secretName: string;
          defaultMode?: number;
          items?: { key: string; path: string }[];
        };
      }
    | undefined;
  const { secretName, defaultMode, items } = volume!.secret;
  const data = secrets.get(secretName);
  if (data === undefined) throw new Error(`no Secret ${secretName}: the pod would not start`);
  const dir = await mkdtemp(join(tmpdir(), 'baton-k8s-secrets-'));
  await chmod(dir, 0o755);
  for (const { key, path } of items ?? Object.keys(data).map((key) => ({ key, path: key }))) {
    const value = data[key];
    if (value === undefined) throw new Error(`no key ${key} in the Secret ${secretName}`);
    const file = join(dir, path);
    await writeFile(file, value);
    await chown(file, 0, pod.securityContext?.fsGroup ?? 0);
    await chmod(file, defaultMode ?? 0o644);
  }
  return dir;
}

/** `docker run` arguments for the container as the pod spec says. */
async function runArguments(
  pod: PodSpec,
  container: Container,
  env: Record<string, string>,
  secrets: Secrets,
): Promise<string[]> {
  const args: string[] = [];
  const context = { ...pod.securityContext, ...container.securityContext };
  if (context.runAsUser !== undefined)
    args.push('--user', `${context.runAsUser}:${pod.securityContext?.runAsGroup ?? 0}`);
  if (pod.securityContext?.fsGroup !== undefined)
    args.push('--group-add', String(pod.securityContext.fsGroup));
  if (container.securityContext?.readOnlyRootFilesystem) args.push('--read-only');
  for (const capability of container.securityContext?.capabilities?.drop ?? [])
    args.push('--cap-drop', capability);
  if (container.securityContext?.allowPrivilegeEscalation === false)
    args.push('--security-opt', 'no-new-privileges');
  const memory = container.resources?.limits?.memory;
  if (memory !== undefined) args.push('--memory', dockerBytes(memory));
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((each) => each.name === mount.name);
    if (volume?.secret !== undefined) {
      const dir = await secretFiles(pod, mount.name, secrets);
      secretsDirs.push(dir);
      args.push('--volume', `${dir}:${mount.mountPath}:ro`);
    } else if (volume?.emptyDir !== undefined) {
      const size = volume.emptyDir.sizeLimit;
      args.push(
        '--tmpfs',
        `${mount.mountPath}:rw,nosuid,nodev,mode=1777${size ? `,size=${dockerBytes(size)}` : ''}`,
      );
    } else throw new Error(`a volume this test cannot stand in for: ${mount.name}`);
  }
  if (container.workingDir !== undefined) args.push('--workdir', container.workingDir);
  for (const [name, value] of Object.entries(env)) args.push('--env', `${name}=${value}`);
  const [entrypoint, ...rest] = [...(container.command ?? []), ...(container.args ?? [])];
  if (entrypoint === undefined) throw new Error('the manifest names no command');
  return [...args, '--entrypoint', entrypoint, IMAGE, ...rest];
}

describe('the image, as the Kubernetes Deployment runs it', () => {
  it('starts, is ready, goes unready while Redis is away and alive all the while, then ready again', async () => {
    const { pod, container } = broker(objects);
    const rendered = containerEnv(objects, container);
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = {
      ...rendered,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      REDIS_URL: redis.url,
    };
    /** Where a probe of the manifest lands: its port is the container's, which PORT moved. */
    const probeUrl = (probe: 'startupProbe' | 'livenessProbe' | 'readinessProbe'): string => {
      const { path, port: named } = container[probe]!.httpGet!;
      expect(portNumber(container, named)).toBe(Number(rendered.PORT));
      return `http://127.0.0.1:${port}${path}`;
    };
    const status = (url: string) =>
      fetch(url).then(
        (response) => response.status,
        () => 0,
      );

    const name = `baton-k8s-test-${port}`;
    containers.push(name);
    await docker([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      'host',
      ...(await runArguments(pod, container, env, renderedSecrets(objects))),
    ]);
    const logs = () => docker(['logs', name]).catch((error: unknown) => String(error));

    await until(async () => (await status(probeUrl('startupProbe'))) === 200, {
      deadlineMs: 30_000,
      what: `the startup probe to pass (${name})`,
    }).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await logs()}`);
    });
    await until(async () => (await status(probeUrl('readinessProbe'))) === 200, {
      deadlineMs: 30_000,
      what: 'the readiness probe to pass',
    });
    expect(await status(probeUrl('livenessProbe'))).toBe(200);
    expect(await logs()).not.toContain('DEVELOPMENT SETUP');

    // As the pod spec says: its user, code it cannot change, and only the tmpfs to write to.
    const exec = (...command: string[]) =>
      promisify(execFile)('docker', ['exec', name, ...command]).then(
        ({ stdout }) => ({ code: 0, stdout: stdout.trim() }),
        (error: { code?: number }) => ({ code: error.code ?? 1, stdout: '' }),
      );
    expect((await exec('id', '-u')).stdout).toBe(String(pod.securityContext?.runAsUser));
    expect((await exec('touch', '/app/planted')).code).not.toBe(0);
    expect((await exec('touch', '/planted')).code).not.toBe(0);
    expect((await exec('touch', '/tmp/scratch')).code).toBe(0);

    // The broker (PID 1, through the image's entrypoint) with its old space at 75 % of the
    // manifest's memory limit (memory.test.ts shows what V8 makes of the flag).
    const memory = container.resources!.limits!.memory!;
    const environ = await exec('sh', '-c', "tr '\\0' '\\n' </proc/1/environ");
    expect(environ.stdout.split('\n')).toContain(
      `NODE_OPTIONS=--max-old-space-size=${oldSpaceMiB(memory)}`,
    );

    // Prometheus's scrape, with the METRICS_TOKEN of the Secret its ServiceMonitor names (that
    // token alone), on the metrics port.
    const monitor = find(objects, 'ServiceMonitor', 'baton-broker') as KubeObject & {
      spec: { endpoints: { authorization: { credentials: { name: string } } }[] };
    };
    const secret = find(
      objects,
      'Secret',
      monitor.spec.endpoints[0]!.authorization.credentials.name,
    );
    const token = Buffer.from(secret.data!.METRICS_TOKEN!, 'base64').toString();
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain(
      `baton_build_info{version="${BUILD_ARGS.VERSION}",revision="${BUILD_ARGS.REVISION}"`,
    );

    await redis.stop();
    try {
      await until(async () => (await status(probeUrl('readinessProbe'))) === 503, {
        deadlineMs: 30_000,
        what: 'the readiness probe to fail with Redis stopped',
      });
      // Alive: the kubelet restarts nothing while Redis is away.
      expect(await status(probeUrl('livenessProbe'))).toBe(200);
    } finally {
      await redis.start();
    }
    await until(async () => (await status(probeUrl('readinessProbe'))) === 200, {
      deadlineMs: 30_000,
      what: 'the readiness probe to pass again once Redis is back',
    });
    expect(await status(probeUrl('livenessProbe'))).toBe(200);
  });
});

/**
 * A redis-sentinel with a password of its own, watching a master that wants another: what the
 * production-sentinel overlay's REDIS_SENTINEL_PASSWORD and REDIS_PASSWORD are for. It rewrites its
 * config file, so the file is in a directory of its own.
 */
async function startSentinel(options: {
  masterName: string;
  masterPort: number;
  password: string;
  masterPassword: string;
}): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'baton-k8s-sentinel-'));
  const config = join(dir, 'sentinel.conf');
  await writeFile(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `requirepass ${options.password}`,
      `sentinel monitor ${options.masterName} 127.0.0.1 ${options.masterPort} 1`,
      `sentinel auth-pass ${options.masterName} ${options.masterPassword}`,
    ].join('\n') + '\n',
  );
  const child: ChildProcess = spawn('redis-server', [config, '--sentinel'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    stream?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const masterAddress = () =>
    promisify(execFile)('redis-cli', [
      '-p',
      String(port),
      '--no-auth-warning',
      '-a',
      options.password,
      'sentinel',
      'get-master-addr-by-name',
      options.masterName,
    ]).then(
      ({ stdout }) => stdout,
      () => '',
    );
  try {
    await until(async () => (await masterAddress()).includes(String(options.masterPort)), {
      deadlineMs: 10_000,
      what: 'the sentinel to answer with its master',
    });
  } catch (error) {
    await stop();
    throw new Error(`${String(error)}\n${output.join('')}`, { cause: error });
  }
  return { port, stop };
}

describe('the image, as the production-sentinel overlay runs it on the Secrets docs/operations.md makes', () => {
  const PRODUCTION = 'production-sentinel';
  let production: KubeObject[];
  const stops: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    production = await render(PRODUCTION);
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
  });

  it('starts and turns ready on exactly the keys those commands put in the Secrets', async () => {
    const { pod, container, deployment } = broker(production);
    const rendered = containerEnv(production, container);
    expect(production.filter((each) => each.kind === 'Secret')).toEqual([]);

    // Redis and its sentinel, each with a password of its own, as production's.
    const redisPassword = randomBytes(18).toString('base64url');
    const sentinelPassword = randomBytes(18).toString('base64url');
    const auth = ['--requirepass', redisPassword, '--masterauth', redisPassword];
    const master = await RedisServer.start({ appendonly: true, args: auth });
    stops.push(() => master[Symbol.asyncDispose]());
    const replica = await RedisServer.start({
      appendonly: true,
      args: [...auth, '--replicaof', '127.0.0.1', String(master.port)],
    });
    stops.push(() => replica[Symbol.asyncDispose]());
    const [masterName = ''] = rendered.REDIS_SENTINEL!.split('@');
    expect(masterName).toMatch(/\S/);
    const sentinel = await startSentinel({
      masterName,
      masterPort: master.port,
      password: sentinelPassword,
      masterPassword: redisPassword,
    });
    stops.push(() => sentinel.stop());

    // The operator's part: the files the commands name, each holding what its key must. A key the
    // document gains and this test does not know fails here, rather than pass unread.
    const values: Record<string, string> = {
      CLIENT_SECRET: 'the-client-secret-the-provider-gave',
      SESSION_SECRET: randomBytes(36).toString('base64'),
      TOKEN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      EVENTS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      REDIS_PASSWORD: redisPassword,
      REDIS_SENTINEL_PASSWORD: sentinelPassword,
      METRICS_TOKEN: randomBytes(32).toString('hex'),
    };
    const made = createdSecrets(
      kubectlCommands(
        shellBlocks(section(await readDoc('operations.md'), '### Kubernetes')).join('\n'),
      ),
    );
    expect(made.length).toBeGreaterThan(0);
    const filesDir = await mkdtemp(join(tmpdir(), 'baton-k8s-operator-'));
    secretsDirs.push(filesDir);
    for (const secret of made) {
      expect(secret.namespace, secret.line).toBe(deployment.metadata.namespace);
      for (const [key, source] of Object.entries(secret.keys)) {
        const value = values[key];
        if (value === undefined)
          throw new Error(`the document makes ${key}, which this test has no value for`);
        // As `echo … > file` writes it: the broker takes one trailing newline off.
        if ('file' in source) {
          await mkdir(join(filesDir, source.file, '..'), { recursive: true });
          await writeFile(join(filesDir, source.file), `${value}\n`);
        }
      }
    }
    // What kubectl sends: each file's bytes, each literal as written.
    const secrets = await secretData(made, (path) => readFile(join(filesDir, path)));

    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = {
      ...rendered,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      REDIS_SENTINEL: `${masterName}@127.0.0.1:${sentinel.port}`,
    };
    const name = `baton-k8s-production-${port}`;
    containers.push(name);
    await docker([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      'host',
      ...(await runArguments(pod, container, env, secrets)),
    ]);
    const logs = () => docker(['logs', name]).catch((error: unknown) => String(error));
    const status = (path: string) =>
      fetch(`http://127.0.0.1:${port}${path}`).then(
        (response) => response.status,
        () => 0,
      );
    for (const probe of ['startupProbe', 'readinessProbe'] as const)
      await until(async () => (await status(container[probe]!.httpGet!.path)) === 200, {
        deadlineMs: 30_000,
        what: `the ${probe} to pass (${name})`,
      }).catch(async (error: unknown) => {
        throw new Error(`${String(error)}\n${await logs()}`);
      });
    const log = await logs();
    expect(log).not.toContain('DEVELOPMENT SETUP');
    expect(log).not.toMatch(/NOAUTH|WRONGPASS/);

    // Prometheus's scrape, with the token of the Secret the ServiceMonitor names, as made above.
    const monitor = find(production, 'ServiceMonitor', 'baton-broker') as KubeObject & {
      spec: { endpoints: { authorization: { credentials: { name: string; key: string } } }[] };
    };
    const { credentials } = monitor.spec.endpoints[0]!.authorization;
    const token = secrets.get(credentials.name)?.[credentials.key]?.toString().trim();
    expect(token).toBe(values.METRICS_TOKEN);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(metrics.status).toBe(200);
  });
});
