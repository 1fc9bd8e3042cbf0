import { routes } from '@baton/shared';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { FILE_SECRETS, loadConfig } from '../../server/src/config/config.ts';
import {
  broker,
  containerEnv,
  find,
  mebibytes,
  OVERLAYS,
  portNumber,
  render,
  specOf,
  type KubeObject,
  type LabelSelector,
  type PodSpec,
} from '../support/kubernetes.ts';
import { expectValid } from './models.ts';

/**
 * deploy/kubernetes/: every overlay rendered by `kubectl kustomize`, every object validated against
 * the Kubernetes API's schemas (kubernetes-models; the Prometheus operator's for its two kinds),
 * and what the issue asks of them checked on the rendered objects. No cluster runs here: what a
 * cluster alone would show (scheduling, the NetworkPolicy enforced, the autoscaler acting) is not.
 */
const VERSION = (
  JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

const podsOf = (objects: KubeObject[]): { name: string; pod: PodSpec }[] =>
  objects
    .filter((each) => each.kind === 'Deployment')
    .map((each) => ({
      name: each.metadata.name,
      pod: specOf<{ template: { spec: PodSpec } }>(each).template.spec,
    }));

const selects = (selector: LabelSelector | undefined, labels: Record<string, string> = {}) =>
  selector?.matchLabels !== undefined &&
  Object.entries(selector.matchLabels).every(([name, value]) => labels[name] === value);

const podLabels = (objects: KubeObject[], deployment: string): Record<string, string> =>
  specOf<{ template: { metadata: { labels: Record<string, string> } } }>(
    find(objects, 'Deployment', deployment),
  ).template.metadata.labels;

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render(overlay);
  });

  it('renders, and every object validates against the Kubernetes API schemas', () => {
    expectValid(objects);
    const names = objects.map((each) => `${each.kind}/${each.metadata.name}`);
    for (const kind of [
      'Deployment',
      'Service',
      'PodDisruptionBudget',
      'HorizontalPodAutoscaler',
      'NetworkPolicy',
      'ServiceMonitor',
      'PrometheusRule',
    ])
      expect(names).toContain(`${kind}/baton-broker`);
  });

  it("runs this release's image, as a non-root user, on a read-only root, with no capability", () => {
    const { container } = broker(objects);
    expect(container.image).toMatch(
      new RegExp(`(^|/)baton-broker:${VERSION.replace(/\./g, '\\.')}$`),
    );
    expect(find(objects, 'Deployment', 'baton-broker').metadata.labels).toMatchObject({
      'app.kubernetes.io/version': VERSION,
    });
    // Every pod of the overlay, its Redis included.
    for (const { name, pod } of podsOf(objects)) {
      expect(pod.securityContext?.runAsNonRoot, name).toBe(true);
      expect(pod.securityContext?.runAsUser, name).toBeGreaterThan(0);
      expect(pod.securityContext?.seccompProfile?.type, name).toBe('RuntimeDefault');
      expect(pod.automountServiceAccountToken, name).toBe(false);
      for (const each of pod.containers) {
        expect(each.securityContext, `${name}/${each.name}`).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(each.securityContext?.capabilities?.add, `${name}/${each.name}`).toBeUndefined();
        // What may be written is a volume of the pod's own, never the image.
        for (const mount of each.volumeMounts ?? []) {
          const volume = pod.volumes?.find((v) => v.name === mount.name);
          expect(volume, `${name}: the volume ${mount.name}`).toBeDefined();
          if (volume?.secret !== undefined) expect(mount.readOnly, mount.mountPath).toBe(true);
          else expect(volume?.emptyDir, `${name}: ${mount.mountPath}`).toBeDefined();
        }
      }
    }
    // The image's `node` user (uid 1000): the code in /app is root's and cannot be rewritten.
    expect(broker(objects).pod.securityContext).toMatchObject({ runAsUser: 1000, fsGroup: 1000 });
  });

  it('probes where the broker answers: alive at /healthz, ready at /readyz, on the port it listens on', () => {
    const { container, pod } = broker(objects);
    const env = containerEnv(objects, container);
    expect(container.livenessProbe?.httpGet?.path).toBe(routes.healthz);
    expect(container.startupProbe?.httpGet?.path).toBe(routes.healthz);
    expect(container.readinessProbe?.httpGet?.path).toBe(routes.readyz);
    for (const probe of [container.livenessProbe, container.startupProbe, container.readinessProbe])
      expect(portNumber(container, probe!.httpGet!.port)).toBe(Number(env.PORT));
    expect(portNumber(container, 'metrics')).toBe(Number(env.METRICS_PORT));
    // SIGKILL never cuts a drain short (docs/operations.md, "Start-up and shutdown").
    expect(pod.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(
      Number(env.SHUTDOWN_DELAY_MS) + Number(env.SHUTDOWN_TIMEOUT_MS),
    );
    expect(Number(env.SHUTDOWN_DELAY_MS)).toBeGreaterThan(0);
    expect(env.HOST).toBe('0.0.0.0');
  });

  it('starts a broker that accepts its configuration (the secret files stood in for)', async () => {
    const { container } = broker(objects);
    const env = containerEnv(objects, container);
    const dir = await mkdtemp(join(tmpdir(), 'baton-manifest-secrets-'));
    try {
      const values: Record<string, string> = {
        CLIENT_SECRET: 'a-client-secret',
        SESSION_SECRET: 'a-session-secret-of-at-least-32-characters',
        TOKEN_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        METRICS_TOKEN: 'a-metrics-token-of-at-least-32-characters',
        EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 5).toString('base64')}`,
      };
      for (const name of FILE_SECRETS) {
        if (env[`${name}_FILE`] === undefined) continue;
        await writeFile(join(dir, name), `${values[name]}\n`);
        env[`${name}_FILE`] = join(dir, name);
      }
      const config = loadConfig(env);
      expect(config.developmentDefaults).toEqual([]);
      expect(config.redis.topology).toBeDefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("takes every secret from a file of the broker's Secrets, as config.ts reads them (FILE_SECRETS)", () => {
    const { container, pod } = broker(objects);
    const env = containerEnv(objects, container);
    for (const name of FILE_SECRETS) expect(env[name], `${name} as a value`).toBeUndefined();
    // The broker's secrets, and the metrics token in a Secret of its own (isolation.test.ts). A
    // Secret the overlay generates has its name and a hash of its data (operations.test.ts).
    const rendered = (name: string) =>
      objects.find((each) => each.kind === 'Secret' && each.metadata.name.startsWith(`${name}-`))
        ?.metadata.name ?? name;
    const secretVolumes = pod.volumes?.filter((volume) => volume.secret !== undefined) ?? [];
    expect(secretVolumes.map((volume) => volume.secret?.secretName).sort()).toEqual([
      rendered('baton-broker-secrets'),
      rendered('baton-metrics'),
    ]);
    // Readable by the broker's group (fsGroup), by no one else.
    for (const volume of secretVolumes) expect(volume.secret?.defaultMode, volume.name).toBe(0o440);
    const mountOf = (secretName: string) => {
      const volume = secretVolumes.find((each) => each.secret?.secretName === secretName);
      return container.volumeMounts?.find((each) => each.name === volume?.name)?.mountPath;
    };
    const given = FILE_SECRETS.filter((name) => env[`${name}_FILE`] !== undefined);
    for (const name of given)
      expect(env[`${name}_FILE`]).toBe(
        `${mountOf(rendered(name === 'METRICS_TOKEN' ? 'baton-metrics' : 'baton-broker-secrets'))}/${name}`,
      );
    expect(given).toEqual(
      expect.arrayContaining([
        'CLIENT_SECRET',
        'SESSION_SECRET',
        'TOKEN_ENCRYPTION_KEYS',
        'METRICS_TOKEN',
      ]),
    );
    expect(given.includes('EVENTS_WEBHOOK_SECRET')).toBe(env.EVENTS_WEBHOOK_URL !== undefined);
    // A *_FILE the broker would not read is a secret it never gets.
    for (const name of Object.keys(env).filter((each) => each.endsWith('_FILE')))
      expect(FILE_SECRETS as readonly string[]).toContain(name.slice(0, -'_FILE'.length));

    const secrets = objects.filter((each) => each.kind === 'Secret');
    if (overlay.startsWith('production')) {
      // Made by the operator in the namespace: no secret is ever in the repository.
      expect(secrets).toEqual([]);
    } else {
      const keys = [
        ...Object.keys(find(objects, 'Secret', rendered('baton-broker-secrets')).data ?? {}),
        ...Object.keys(find(objects, 'Secret', rendered('baton-metrics')).data ?? {}),
      ];
      expect(keys.sort()).toEqual([...given].sort());
    }
  });

  it('keeps brokers through a voluntary disruption, and leaves their count to the autoscaler', () => {
    const { deployment } = broker(objects);
    const labels = podLabels(objects, 'baton-broker');
    const spec = specOf<{
      replicas?: number;
      selector: LabelSelector;
      strategy: { rollingUpdate: { maxUnavailable: number } };
    }>(deployment);
    expect(spec.replicas).toBeUndefined();
    expect(spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    expect(selects(spec.selector, labels)).toBe(true);

    const hpa = specOf<{
      scaleTargetRef: { kind: string; name: string };
      minReplicas: number;
      maxReplicas: number;
      metrics: { resource?: { name: string } }[];
    }>(find(objects, 'HorizontalPodAutoscaler', 'baton-broker'));
    expect(hpa.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'baton-broker' });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.maxReplicas).toBeGreaterThan(hpa.minReplicas);
    expect(hpa.metrics.map((metric) => metric.resource?.name)).toContain('cpu');

    const pdb = specOf<{ maxUnavailable?: number; minAvailable?: number; selector: LabelSelector }>(
      find(objects, 'PodDisruptionBudget', 'baton-broker'),
    );
    expect(selects(pdb.selector, labels)).toBe(true);
    // At the autoscaler's floor, a disruption still leaves a broker serving.
    const left =
      pdb.maxUnavailable !== undefined ? hpa.minReplicas - pdb.maxUnavailable : pdb.minAvailable;
    expect(left).toBeGreaterThanOrEqual(1);
    expect(pdb.maxUnavailable ?? 0).toBeGreaterThanOrEqual(1);
  });

  it('asks for the measured resources (docs/performance.md), with no CPU limit', () => {
    const { container } = broker(objects);
    const { requests = {}, limits = {} } = container.resources ?? {};
    expect(requests.cpu).toBeDefined();
    expect(limits.cpu).toBeUndefined();
    // Above the highest RSS measured under load (540 MB, S6), and asked for as much as the limit:
    // the heap's share is of memory the pod is sure to have.
    expect(mebibytes(limits.memory!)).toBeGreaterThan(540e6 / 2 ** 20);
    expect(requests.memory).toBe(limits.memory);
  });

  it("runs the broker through the image's entrypoint, which sizes the heap from the memory limit", () => {
    const { container } = broker(objects);
    expect(container.command).toEqual(['baton-entrypoint', 'node', 'dist/main.js']);
  });

  it('spreads brokers across zones, then nodes, and still schedules them where nodes have no zone', () => {
    const { pod } = broker(objects);
    // A preference: DoNotSchedule would leave pods Pending on a cluster whose nodes have no zone
    // label (components/strict-zone-spread makes it a rule; components.test.ts).
    expect(
      (pod.topologySpreadConstraints ?? []).map((each) => [
        each.topologyKey,
        each.whenUnsatisfiable,
      ]),
    ).toEqual([
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
      ['kubernetes.io/hostname', 'ScheduleAnyway'],
    ]);
  });

  it('serves the public port on one Service and the metrics port on another, which the ServiceMonitor scrapes with the metrics token', () => {
    const labels = podLabels(objects, 'baton-broker');
    const { container, pod } = broker(objects);
    const env = containerEnv(objects, container);
    interface ServiceSpec {
      selector: Record<string, string>;
      ports: { name: string; targetPort: string }[];
    }
    const services = objects
      .filter((each) => each.kind === 'Service')
      .filter((each) => selects({ matchLabels: specOf<ServiceSpec>(each).selector }, labels));
    const ports = (name: string) =>
      specOf<ServiceSpec>(find(services, 'Service', name)).ports.map((port) => [
        port.name,
        portNumber(container, port.targetPort),
      ]);
    // The public Service, which an ingress or a gateway routes to, has the public port alone.
    expect(ports('baton-broker')).toEqual([['http', Number(env.PORT)]]);
    expect(ports('baton-broker-metrics')).toEqual([['metrics', Number(env.METRICS_PORT)]]);
    expect(services).toHaveLength(2);

    const spec = specOf<{
      selector: LabelSelector;
      endpoints: {
        port: string;
        path: string;
        authorization: { type: string; credentials: { name: string; key: string } };
      }[];
    }>(find(objects, 'ServiceMonitor', 'baton-broker'));
    expect(
      services
        .filter((each) => selects(spec.selector, each.metadata.labels))
        .map((each) => each.metadata.name),
    ).toEqual(['baton-broker-metrics']);
    expect(spec.endpoints).toHaveLength(1);
    const [endpoint] = spec.endpoints;
    expect(endpoint!.port).toBe('metrics');
    expect(endpoint!.path).toBe('/metrics');
    // The token of the Secret the broker's METRICS_TOKEN_FILE comes from (whatever its rendered name).
    const metricsVolume = pod.volumes?.find(
      (volume) =>
        volume.name ===
        container.volumeMounts?.find((mount) =>
          env.METRICS_TOKEN_FILE?.startsWith(`${mount.mountPath}/`),
        )?.name,
    );
    expect(endpoint!.authorization).toEqual({
      type: 'Bearer',
      credentials: { name: metricsVolume?.secret?.secretName, key: 'METRICS_TOKEN' },
    });
  });

  it('lets the broker reach DNS, https and its Redis, and Prometheus alone reach its metrics', () => {
    const policySpec = specOf<{
      podSelector: LabelSelector;
      policyTypes: string[];
      ingress: {
        from?: { namespaceSelector?: LabelSelector; podSelector?: LabelSelector }[];
        ports: { port: string | number }[];
      }[];
      egress: {
        to?: { podSelector?: LabelSelector; ipBlock?: { cidr: string } }[];
        ports: { port: number; protocol: string }[];
      }[];
    }>(find(objects, 'NetworkPolicy', 'baton-broker'));
    const labels = podLabels(objects, 'baton-broker');
    const { container } = broker(objects);
    const env = containerEnv(objects, container);
    expect(selects(policySpec.podSelector, labels)).toBe(true);
    expect(policySpec.policyTypes).toEqual(['Ingress', 'Egress']);

    const ingressTo = (port: string) =>
      policySpec.ingress.filter((rule) => rule.ports.some((each) => each.port === port));
    expect(ingressTo('http')).toHaveLength(1);
    const [metrics] = ingressTo('metrics');
    expect(metrics?.from?.every((peer) => peer.namespaceSelector !== undefined)).toBe(true);
    expect(metrics?.from?.length).toBeGreaterThan(0);

    const egressPorts = (port: number) =>
      policySpec.egress.filter((rule) => rule.ports.some((each) => each.port === port));
    expect(egressPorts(53)).toHaveLength(1);
    expect(egressPorts(443)).toHaveLength(1);
    // Every Redis port the configuration names.
    const redisPorts = [env.REDIS_URL, env.REDIS_SENTINEL, env.REDIS_CLUSTER_NODES]
      .filter((value) => value !== undefined)
      .flatMap((value) =>
        [...value.matchAll(/:(\d+)(?=,|\/|$)/g)].map((found) => Number(found[1])),
      );
    expect(redisPorts.length).toBeGreaterThan(0);
    for (const port of new Set(redisPorts))
      expect(egressPorts(port), `port ${port}`).toHaveLength(1);

    if (env.REDIS_URL?.startsWith('redis://baton-redis:')) {
      // The overlay's own Redis: reached by pod selector, and admitting the brokers alone.
      const [rule] = egressPorts(6379);
      expect(selects(rule?.to?.[0]?.podSelector, podLabels(objects, 'baton-redis'))).toBe(true);
      const redisPolicy = specOf<{
        podSelector: LabelSelector;
        ingress: { from: { podSelector: LabelSelector }[] }[];
      }>(find(objects, 'NetworkPolicy', 'baton-redis'));
      expect(selects(redisPolicy.podSelector, podLabels(objects, 'baton-redis'))).toBe(true);
      expect(redisPolicy.ingress.flatMap((each) => each.from)).toHaveLength(1);
      expect(selects(redisPolicy.ingress[0]!.from[0]!.podSelector, labels)).toBe(true);
    }
  });
});

it('carries, across the overlays, every secret the broker can read from a file', async () => {
  const given = new Set<string>();
  for (const overlay of OVERLAYS) {
    const objects = await render(overlay);
    const env = containerEnv(objects, broker(objects).container);
    for (const name of FILE_SECRETS) if (env[`${name}_FILE`] !== undefined) given.add(name);
  }
  expect([...given].sort()).toEqual([...FILE_SECRETS].sort());
});
