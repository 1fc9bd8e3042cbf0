import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { FILE_SECRETS, loadConfig } from '../../server/src/config/config.ts';
import {
  broker,
  containerEnv,
  find,
  OVERLAYS,
  portNumber,
  render,
  specOf,
  type KubeObject,
} from '../support/kubernetes.ts';
import {
  accessLabel,
  ADMIN_KEY,
  ADMIN_SECRET,
  target,
  unhashed,
  withoutAdmin,
  type ServiceSpec,
} from './admin-objects.ts';
import { renderWith } from './kustomize.ts';
import { expectValid } from './models.ts';
import { admitted, opensPort, type PolicySpec, type Source } from './network-policy.ts';

/**
 * components/admin: the broker's admin listener (ADMIN_PORT, behind the tokens of
 * ADMIN_TOKENS_FILE) turned on in an overlay, as an operator adds it (issue 41, "Kubernetes"). On
 * every overlay: the objects validate; the tokens come from a file of the Secret
 * `baton-admin-tokens`, mounted read-only; the admin port has a Service of its own, which no other
 * Service shares; by the NetworkPolicies, only a namespace carrying the label reaches it, while the
 * public and metrics ports keep their own sources; and nothing else changes. exposure.test.ts
 * checks that no Ingress or HTTPRoute routes to it, admin-docs.test.ts the documented commands.
 */

describe.each(OVERLAYS)('the %s overlay with components/admin', (overlay) => {
  let plain: KubeObject[];
  let objects: KubeObject[];
  let env: Record<string, string>;
  beforeAll(async () => {
    [plain, objects] = await Promise.all([render(overlay), renderWith(overlay, ['admin'])]);
    env = containerEnv(objects, broker(objects).container);
  });

  it('renders, and every object validates against the Kubernetes API schemas', () => {
    expectValid(objects);
  });

  it('listens on ADMIN_PORT (9465), the container port `admin`, apart from the public and metrics ports', () => {
    const { container } = broker(objects);
    expect(env.ADMIN_PORT).toBe('9465');
    expect(portNumber(container, 'admin')).toBe(9465);
    expect(new Set([env.PORT, env.METRICS_PORT, env.ADMIN_PORT]).size).toBe(3);
    // Off without the component: the base and the overlays as shipped have no admin listener.
    const without = broker(plain).container;
    expect(containerEnv(plain, without).ADMIN_PORT).toBeUndefined();
    expect(without.ports?.map((each) => each.name)).not.toContain('admin');
  });

  it(`reads the tokens from the file ${ADMIN_KEY} of the Secret ${ADMIN_SECRET}, mounted read-only, never from an environment value`, () => {
    const { container, pod } = broker(objects);
    const file = env.ADMIN_TOKENS_FILE!;
    expect(file, 'ADMIN_TOKENS_FILE').toMatch(/^\//);
    const mount = container.volumeMounts?.find((each) => file.startsWith(`${each.mountPath}/`));
    expect(mount, `a mount holding ${file}`).toBeDefined();
    expect(mount!.readOnly).toBe(true);
    const volume = pod.volumes?.find((each) => each.name === mount!.name) as
      | {
          secret?: {
            secretName: string;
            items?: { key: string; path: string }[];
            defaultMode?: number;
          };
        }
      | undefined;
    // That key alone, at the path the variable names, readable by the broker's group only.
    expect(volume?.secret).toEqual({
      secretName: ADMIN_SECRET,
      items: [{ key: ADMIN_KEY, path: file.slice(mount!.mountPath.length + 1) }],
      defaultMode: 0o440,
    });
    // A directory of its own: no other volume's files beside the tokens, nor these beside others'.
    const mounts = container.volumeMounts!.filter(
      (each) => each.mountPath === mount!.mountPath || file.startsWith(`${each.mountPath}/`),
    );
    expect(mounts).toEqual([mount]);
    // The Secret is the operator's, made in the namespace: nothing in the repository holds tokens.
    expect(objects.filter((each) => each.kind === 'Secret')).toEqual(
      plain.filter((each) => each.kind === 'Secret'),
    );
    expect(container.envFrom?.some((each) => each.secretRef !== undefined)).toBe(false);
    expect(env.ADMIN_TOKENS, 'the tokens file as a value').toBeUndefined();
  });

  it('starts a broker that accepts the admin settings (the token file stood in for)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-k8s-admin-'));
    const given = { ...env };
    try {
      for (const name of FILE_SECRETS) {
        if (given[`${name}_FILE`] === undefined) continue;
        const values: Record<string, string> = {
          TOKEN_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
          EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 5).toString('base64')}`,
        };
        await writeFile(
          join(dir, name),
          `${values[name] ?? `${name}-stood-in-for-the-file-of-32-chars`}\n`,
        );
        given[`${name}_FILE`] = join(dir, name);
      }
      const entry = {
        name: 'oncall',
        role: 'operator',
        sha256: createHash('sha256').update('a-token-only-this-test-knows').digest('hex'),
      };
      await writeFile(join(dir, ADMIN_KEY), JSON.stringify([entry]));
      const config = loadConfig({ ...given, ADMIN_TOKENS_FILE: join(dir, ADMIN_KEY) });
      expect(config.admin).toMatchObject({ port: 9465, tokens: [entry] });
      expect(config.listen.port).not.toBe(config.admin!.port);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives the admin port a ClusterIP Service of its own, baton-admin, and no other Service carries it', () => {
    const { podLabels, container } = target(objects);
    const carriers = objects
      .filter((each) => each.kind === 'Service')
      .filter((each) =>
        Object.entries(specOf<ServiceSpec>(each).selector).every(([k, v]) => podLabels[k] === v),
      )
      .filter((each) =>
        specOf<ServiceSpec>(each).ports.some(
          (port) => portNumber(container, port.targetPort ?? port.port) === 9465,
        ),
      );
    expect(carriers.map((each) => each.metadata.name)).toEqual(['baton-admin']);
    const spec = specOf<ServiceSpec>(carriers[0]!);
    expect(spec.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(spec.externalIPs).toBeUndefined();
    expect(spec.ports).toEqual([
      { name: 'admin', port: 9465, targetPort: 'admin', protocol: 'TCP' },
    ]);
    expect(carriers[0]!.metadata.namespace).toBe(target(objects).namespace);
  });

  it('admits the admin port only from a namespace carrying the label, and leaves the public and metrics ports as they were', () => {
    const pod = target(objects);
    const [label, value] = accessLabel(objects);
    const port = (name: string) => portNumber(pod.container, name);
    const reach = (source: Source) =>
      Object.fromEntries(
        ['http', 'metrics', 'admin'].map((name) => [
          name,
          admitted(objects, pod, source, port(name)),
        ]),
      );
    const labelled = { [label]: value };
    const cases: [string, Source, Record<string, boolean>][] = [
      [
        'a labelled namespace',
        { namespace: 'ops', namespaceLabels: labelled },
        { http: true, metrics: false, admin: true },
      ],
      [
        'the broker’s own namespace',
        { namespace: pod.namespace ?? 'default' },
        { http: true, metrics: false, admin: false },
      ],
      [
        'monitoring, unlabelled',
        { namespace: 'monitoring' },
        { http: true, metrics: true, admin: false },
      ],
      [
        'monitoring, labelled',
        { namespace: 'monitoring', namespaceLabels: labelled },
        { http: true, metrics: true, admin: true },
      ],
      [
        'the ingress controller',
        { namespace: 'ingress-nginx' },
        { http: true, metrics: false, admin: false },
      ],
      [
        'the label with another value',
        { namespace: 'ops', namespaceLabels: { [label]: `not-${value}` } },
        { http: true, metrics: false, admin: false },
      ],
      [
        'the label on the pod, not its namespace',
        { namespace: 'ops', podLabels: labelled },
        { http: true, metrics: false, admin: false },
      ],
      [
        'an address outside the cluster',
        { address: '203.0.113.7' },
        { http: true, metrics: false, admin: false },
      ],
    ];
    for (const [who, source, expected] of cases) expect(reach(source), who).toEqual(expected);
  });

  it('opens the admin port in one rule of one policy, baton-admin, which opens nothing else', () => {
    const { container } = target(objects);
    const listeners = [env.PORT, env.METRICS_PORT, env.ADMIN_PORT].map(Number);
    const opening = objects
      .filter((each) => each.kind === 'NetworkPolicy')
      .flatMap((policy) =>
        (specOf<PolicySpec>(policy).ingress ?? []).map((rule) => ({
          policy: policy.metadata.name,
          rule,
        })),
      )
      .filter(({ rule }) => opensPort(rule, 9465, container));
    expect(opening.map((each) => each.policy)).toEqual(['baton-admin']);
    const { rule } = opening[0]!;
    expect(listeners.filter((each) => opensPort(rule, each, container))).toEqual([9465]);
    // Its peers: namespaces by label, never an address range or every source.
    expect(rule.from?.length).toBeGreaterThan(0);
    for (const peer of rule.from ?? []) {
      expect(peer.ipBlock).toBeUndefined();
      expect(Object.keys(peer.namespaceSelector?.matchLabels ?? {})).toHaveLength(1);
    }
    // Ingress alone: the broker's egress stays the base policy's.
    expect(specOf<PolicySpec>(find(objects, 'NetworkPolicy', 'baton-admin')).policyTypes).toEqual([
      'Ingress',
    ]);
  });

  it('changes nothing else: the Deployment gains the port, the variable and the mount; the ConfigMap ADMIN_PORT', () => {
    const key = (each: KubeObject) => `${each.kind}/${each.metadata.name}`;
    const sorted = (list: KubeObject[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(unhashed(sorted(withoutAdmin(objects)))).toEqual(unhashed(sorted(plain)));
    // The ConfigMap's new name is in the pod template: applying the component rolls the pods.
    const configMap = (list: KubeObject[]) =>
      list.find(
        (each) => each.kind === 'ConfigMap' && each.metadata.name.startsWith('baton-broker-config'),
      )!.metadata.name;
    expect(configMap(objects)).not.toBe(configMap(plain));
  });
});
