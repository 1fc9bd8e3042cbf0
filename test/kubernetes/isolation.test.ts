import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FILE_SECRETS } from '../../server/src/config/config.ts';
import {
  broker,
  containerEnv,
  find,
  KUBERNETES_DIR,
  OVERLAYS,
  render,
  specOf,
  type KubeObject,
  type LabelSelector,
} from '../support/kubernetes.ts';
import {
  commentText,
  createdSecrets,
  kubectlCommands,
  readDoc,
  section,
  shellBlocks,
  type Kubectl,
} from './documented.ts';
import { overlayKustomization, renderWith } from './kustomize.ts';
import { contains } from './network-policy.ts';

/**
 * What a leak on either side reaches (issue 38, item 10). Prometheus's operator must read the
 * metrics token, so the token has a Secret of its own and the operator may read that Secret
 * alone. The broker sends https to the internet, never to the cluster's own addresses (its API
 * server above all) or to the cloud's metadata service. Checked on every rendered overlay; the
 * cluster's ranges are the settings in deploy/kubernetes/base/cluster-network.yaml.
 */

interface NetworkPeer {
  ipBlock?: { cidr: string; except?: string[] };
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
}
interface EgressRule {
  to?: NetworkPeer[];
  ports?: { port?: number | string; endPort?: number; protocol?: string }[];
}
interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

const SETTINGS_FILE = `${KUBERNETES_DIR}base/cluster-network.yaml`;

/** The cluster's ranges, as the operator sets them (the one place: base/cluster-network.yaml). */
async function clusterNetwork(): Promise<Record<string, string>> {
  const text = await readFile(SETTINGS_FILE, 'utf8').catch(() => {
    throw new Error(`${SETTINGS_FILE}: no settings of the cluster's service and pod ranges`);
  });
  return (parse(text) as { data: Record<string, string> }).data;
}

/** The first address of a range: the API server's in the service range (kubeadm's 10.96.0.1). */
function firstAddress(cidr: string): string {
  const [network = ''] = cidr.split('/');
  if (isIPv6(network)) {
    if (!network.endsWith('::')) throw new Error(`not a network address ending in '::': ${cidr}`);
    return `${network}1`;
  }
  const value = network.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0) + 1;
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

/** Whether a rule lets TCP to this port out (no ports: every port). */
const opensPort = (rule: EgressRule, port: number): boolean =>
  rule.ports === undefined ||
  rule.ports.length === 0 ||
  rule.ports.some(
    (each) =>
      (each.protocol ?? 'TCP') === 'TCP' &&
      (each.port === undefined ||
        each.port === port ||
        (typeof each.port === 'number' && each.port <= port && port <= (each.endPort ?? 0))),
  );

/**
 * Whether a rule lets this address out, as a NetworkPolicy reads it: no `to` is every address; an
 * ipBlock is its CIDR less its excepts. A pod or namespace selector matches pods, which neither
 * the API server's service address nor the metadata service is.
 */
const admits = (rule: EgressRule, address: string): boolean =>
  rule.to === undefined ||
  rule.to.length === 0 ||
  rule.to.some(
    ({ ipBlock }) =>
      ipBlock !== undefined &&
      contains(ipBlock.cidr, address) &&
      !(ipBlock.except ?? []).some((range) => contains(range, address)),
  );

/**
 * The Secrets some `kubectl … create secret generic NAME --from-file=KEY=…` commands make (in a
 * YAML file's comments, or a document's code), with the keys of each.
 */
const documentedSecrets = (commands: Kubectl[]): Map<string, string[]> =>
  new Map(createdSecrets(commands).map(({ name, keys }) => [name, Object.keys(keys).sort()]));

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  let objects: KubeObject[];
  let documented: Map<string, string[]>;
  beforeAll(async () => {
    objects = await render(overlay);
    documented = documentedSecrets(
      kubectlCommands(
        commentText(
          await readFile(`${KUBERNETES_DIR}overlays/${overlay}/kustomization.yaml`, 'utf8'),
        ),
      ),
    );
  });

  /**
   * The keys of a Secret: the rendered one's (the development overlay makes its own), or those
   * the overlay's commands give it (production: the operator makes it in the namespace).
   */
  const keysOf = (name: string): string[] | undefined => {
    const rendered = objects.find((each) => each.kind === 'Secret' && each.metadata.name === name);
    return rendered !== undefined ? Object.keys(rendered.data ?? {}).sort() : documented.get(name);
  };

  /** The Secret the ServiceMonitor's scrape takes its bearer token from. */
  const scrapeCredentials = (): { name: string; key: string } => {
    const { endpoints } = specOf<{
      endpoints: { authorization?: { credentials?: { name: string; key: string } } }[];
    }>(find(objects, 'ServiceMonitor', 'baton-broker'));
    expect(endpoints).toHaveLength(1);
    const credentials = endpoints[0]?.authorization?.credentials;
    if (credentials === undefined) throw new Error('the ServiceMonitor sends no bearer token');
    return credentials;
  };

  /** For each secret the broker reads from a file: the Secret and the key the file comes from. */
  const secretSources = (): Record<string, { secret: string; key: string }> => {
    const { container, pod } = broker(objects);
    const env = containerEnv(objects, container);
    const sources: Record<string, { secret: string; key: string }> = {};
    for (const name of FILE_SECRETS) {
      const file = env[`${name}_FILE`];
      if (file === undefined) continue;
      const mount = container.volumeMounts?.find((each) => file.startsWith(`${each.mountPath}/`));
      const volume = pod.volumes?.find((each) => each.name === mount?.name) as
        { secret?: { secretName: string; items?: { key: string; path: string }[] } } | undefined;
      if (mount === undefined || volume?.secret === undefined)
        throw new Error(`${name}_FILE=${file} is in no Secret volume of the pod`);
      const path = file.slice(mount.mountPath.length + 1);
      const key = volume.secret.items?.find((each) => each.path === path)?.key ?? path;
      sources[name] = { secret: volume.secret.secretName, key };
    }
    return sources;
  };

  it('gives the Prometheus operator a Secret that holds METRICS_TOKEN and nothing else', () => {
    const { name, key } = scrapeCredentials();
    expect(key).toBe('METRICS_TOKEN');
    expect(keysOf(name), `the keys of the Secret ${name}, which the ServiceMonitor reads`).toEqual([
      'METRICS_TOKEN',
    ]);
  });

  it("gives the broker METRICS_TOKEN from the ServiceMonitor's Secret, and every other secret from another", () => {
    const { name } = scrapeCredentials();
    const sources = secretSources();
    expect(sources.METRICS_TOKEN).toEqual({ secret: name, key: 'METRICS_TOKEN' });
    const others = Object.entries(sources).filter(([each]) => each !== 'METRICS_TOKEN');
    expect(others.length).toBeGreaterThan(0);
    for (const [each, source] of others) expect(source.secret, each).not.toBe(name);
    // Each key the broker reads is one its Secret is made with (here, or by the overlay's commands).
    for (const [each, source] of Object.entries(sources))
      expect(keysOf(source.secret), `${each}: the Secret ${source.secret}`).toContain(source.key);
  });

  it('lets the monitoring namespace get that one Secret by name, and grants no other access to a Secret', () => {
    const { name } = scrapeCredentials();
    const grants = objects
      .filter((each) => each.kind === 'Role' || each.kind === 'ClusterRole')
      .flatMap((role) =>
        ((role as KubeObject & { rules?: PolicyRule[] }).rules ?? [])
          .filter((rule) => rule.resources?.some((each) => each === 'secrets' || each === '*'))
          .map((rule) => ({ role, rule })),
      );
    expect(grants).toHaveLength(1);
    const [{ role, rule }] = grants as [(typeof grants)[number]];
    expect(role.kind).toBe('Role');
    expect(rule).toEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: [name],
      verbs: ['get'],
    });
    const bindings = objects.filter(
      (each) =>
        each.kind === 'RoleBinding' &&
        (each as KubeObject & { roleRef: { kind: string; name: string } }).roleRef.name ===
          role.metadata.name,
    );
    expect(bindings).toHaveLength(1);
    const { subjects } = bindings[0] as KubeObject & { subjects: Subject[] };
    // The namespace whose Prometheus the NetworkPolicy lets scrape the metrics port.
    const { ingress } = specOf<{
      ingress: { from?: { namespaceSelector?: LabelSelector }[] }[];
    }>(find(objects, 'NetworkPolicy', 'baton-broker'));
    const monitoring = ingress
      .flatMap((each) => each.from ?? [])
      .map((peer) => peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'])
      .filter((each) => each !== undefined);
    expect(monitoring).toHaveLength(1);
    expect(subjects.length).toBeGreaterThan(0);
    for (const subject of subjects)
      expect(subject).toMatchObject({ kind: 'ServiceAccount', namespace: monitoring[0] });
  });

  describe('egress on 443', () => {
    let rules: EgressRule[];
    beforeAll(() => {
      rules = specOf<{ egress: EgressRule[] }>(
        find(objects, 'NetworkPolicy', 'baton-broker'),
      ).egress.filter((rule) => opensPort(rule, 443));
    });

    it('names its destinations: no rule is open to every address', () => {
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) expect(rule.to ?? [], JSON.stringify(rule)).not.toEqual([]);
    });

    it('reaches no cloud metadata service (169.254.169.254, fd00:ec2::254)', () => {
      for (const address of ['169.254.169.254', 'fd00:ec2::254'])
        expect(
          rules.filter((rule) => admits(rule, address)),
          address,
        ).toEqual([]);
    });

    it("excepts the cluster's service and pod ranges, as set in base/cluster-network.yaml, from every rule open to the internet", async () => {
      const settings = await clusterNetwork();
      const excepted: Record<string, string[]> = {
        '0.0.0.0/0': [settings.SERVICE_CIDR!, settings.POD_CIDR!, '169.254.0.0/16'],
        '::/0': [settings.SERVICE_CIDR_IPV6!, settings.POD_CIDR_IPV6!, 'fe80::/10'],
      };
      const open = rules.flatMap((rule) => rule.to ?? []).filter((peer) => peer.ipBlock);
      expect(open.map((peer) => peer.ipBlock!.cidr).sort()).toEqual(['0.0.0.0/0', '::/0']);
      for (const { ipBlock } of open)
        expect(ipBlock!.except, ipBlock!.cidr).toEqual(
          expect.arrayContaining(excepted[ipBlock!.cidr]!),
        );
    });

    it("lets no rule reach the API server's service address, nor a pod, and still reaches the internet", async () => {
      const settings = await clusterNetwork();
      const cluster = [
        settings.SERVICE_CIDR!,
        settings.POD_CIDR!,
        settings.SERVICE_CIDR_IPV6!,
        settings.POD_CIDR_IPV6!,
      ].map(firstAddress);
      for (const address of cluster)
        expect(
          rules.filter((rule) => admits(rule, address)),
          address,
        ).toEqual([]);
      // The provider and the webhook receiver, on either family (documentation addresses).
      for (const address of ['203.0.113.7', '2001:db8::7'])
        expect(
          rules.some((rule) => admits(rule, address)),
          address,
        ).toBe(true);
    });
  });
});

/** The Redis settings beside an overlay's hosts: its `baton-redis-network` generator's literals. */
async function redisNetwork(overlay: string): Promise<Record<string, string> | undefined> {
  const generator = (await overlayKustomization(overlay)).configMapGenerator?.find(
    (each) => each.name === 'baton-redis-network',
  );
  if (generator === undefined) return undefined;
  return Object.fromEntries(
    (generator.literals ?? []).map((literal) => {
      const at = literal.indexOf('=');
      return [literal.slice(0, at), literal.slice(at + 1)];
    }),
  );
}

/** The Redis ports of the broker's configuration (REDIS_URL, REDIS_SENTINEL, REDIS_CLUSTER_NODES). */
const redisPorts = (env: Record<string, string>): number[] => [
  ...new Set(
    [env.REDIS_URL, env.REDIS_SENTINEL, env.REDIS_CLUSTER_NODES]
      .filter((value) => value !== undefined)
      .flatMap((value) =>
        [...value.matchAll(/:(\d+)(?=,|\/|$)/g)].map((found) => Number(found[1])),
      ),
  ),
];

describe.each(OVERLAYS)('the %s overlay: egress to Redis', (overlay) => {
  let objects: KubeObject[];
  let env: Record<string, string>;
  beforeAll(async () => {
    objects = await render(overlay);
    env = containerEnv(objects, broker(objects).container);
  });

  const redisRules = (rendered: KubeObject[]) =>
    specOf<{ egress: EgressRule[] }>(find(rendered, 'NetworkPolicy', 'baton-broker')).egress.filter(
      (rule) => redisPorts(env).some((port) => opensPort(rule, port)) && !opensPort(rule, 443),
    );

  it("reaches an external Redis's ports in the one range set beside its hosts (REDIS_CIDR), and nowhere else", async () => {
    if (env.REDIS_SENTINEL === undefined && env.REDIS_CLUSTER_NODES === undefined) {
      // The overlay's own Redis, by pod selector (manifests.test.ts).
      expect(await redisNetwork(overlay)).toBeUndefined();
      return;
    }
    const settings = await redisNetwork(overlay);
    expect(settings?.REDIS_CIDR, `${overlay}: REDIS_CIDR in baton-redis-network`).toBeDefined();
    const rules = redisRules(objects);
    expect(rules).toHaveLength(1);
    expect(rules[0]!.to).toEqual([{ ipBlock: { cidr: settings!.REDIS_CIDR } }]);
    for (const port of redisPorts(env))
      expect(opensPort(rules[0]!, port), `port ${port}`).toBe(true);
    // Read by Kustomize only: never applied.
    expect(objects.filter((each) => each.metadata.name === 'baton-redis-network')).toEqual([]);
  });

  it('follows REDIS_CIDR when the operator sets it', async () => {
    if (env.REDIS_SENTINEL === undefined && env.REDIS_CLUSTER_NODES === undefined) return;
    expect(await redisNetwork(overlay)).toBeDefined();
    const rendered = await renderWith(overlay, [], (kustomization) => {
      const generator = kustomization.configMapGenerator!.find(
        (each) => each.name === 'baton-redis-network',
      )!;
      generator.literals = generator.literals!.map((literal) =>
        literal.startsWith('REDIS_CIDR=') ? 'REDIS_CIDR=192.0.2.0/28' : literal,
      );
    });
    expect(redisRules(rendered).map((rule) => rule.to)).toEqual([
      [{ ipBlock: { cidr: '192.0.2.0/28' } }],
    ]);
  });
});

describe('docs/operations.md, "Kubernetes"', () => {
  it("makes the metrics token's Secret with METRICS_TOKEN alone, and the broker's without it", async () => {
    const commands = kubectlCommands(
      shellBlocks(section(await readDoc('operations.md'), '### Kubernetes')).join('\n'),
    );
    const objects = await render('production-sentinel');
    const { endpoints } = specOf<{
      endpoints: { authorization: { credentials: { name: string } } }[];
    }>(find(objects, 'ServiceMonitor', 'baton-broker'));
    const secrets = documentedSecrets(commands);
    const name = endpoints[0]!.authorization.credentials.name;
    expect(secrets.get(name), name).toEqual(['METRICS_TOKEN']);
    const others = [...secrets].filter(([each]) => each !== name);
    expect(others.length).toBeGreaterThan(0);
    for (const [each, keys] of others) expect(keys, each).not.toContain('METRICS_TOKEN');
  });
});
