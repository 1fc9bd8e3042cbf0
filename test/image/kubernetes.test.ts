import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
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

/**
 * The Secret volume as the kubelet lays it out: one file per key, owned by root and the pod's
 * fsGroup, with the volume's defaultMode.
 */
async function secretFiles(pod: PodSpec, volumeName: string): Promise<string> {
  const volume = pod.volumes?.find((each) => each.name === volumeName);
  const secret = find(objects, 'Secret', volume!.secret!.secretName);
  const dir = await mkdtemp(join(tmpdir(), 'baton-k8s-secrets-'));
  await chmod(dir, 0o755);
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    const file = join(dir, key);
    await writeFile(file, Buffer.from(value, 'base64'));
    await chown(file, 0, pod.securityContext?.fsGroup ?? 0);
    await chmod(file, volume!.secret!.defaultMode ?? 0o644);
  }
  return dir;
}

/** `docker run` arguments for the container as the pod spec says. */
async function runArguments(
  pod: PodSpec,
  container: Container,
  env: Record<string, string>,
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
      const dir = await secretFiles(pod, mount.name);
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
      ...(await runArguments(pod, container, env)),
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
    const secret = find(objects, 'Secret', monitor.spec.endpoints[0]!.authorization.credentials.name);
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
