import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  broker,
  find,
  oldSpaceMiB,
  OVERLAYS,
  render,
  specOf,
  type KubeObject,
} from '../support/kubernetes.ts';
import {
  createdSecrets,
  kubectlCommands,
  readDoc,
  section,
  shellBlocks,
  type Kubectl,
} from './documented.ts';
import { renderWith } from './kustomize.ts';
import { secretReads } from './pod-secrets.ts';

/**
 * What docs/operations.md and docs/upgrading.md tell an operator to run, against the objects it
 * runs on: the Secrets its commands make hold every key the pods read, a changed Secret reaches
 * the pods, an upgrade never leaves the autoscaled Deployment at no pods, and the broker run
 * outside the image gets a bounded heap.
 */

const PRODUCTION = OVERLAYS.filter((overlay) => overlay.startsWith('production'));

let operations: string;
let kubernetesSection: string;
let kubernetesCommands: Kubectl[];
beforeAll(async () => {
  operations = await readDoc('operations.md');
  kubernetesSection = section(operations, '### Kubernetes');
  kubernetesCommands = kubectlCommands(shellBlocks(kubernetesSection).join('\n'));
});

/** `deployment/NAME`, `deploy/NAME` or `deployment NAME` in a command's words: NAME. */
function deploymentOf(args: string[]): string | undefined {
  for (const [i, word] of args.entries()) {
    const found = /^(?:deployments?|deploy)(?:\.apps)?\/(.+)$/.exec(word);
    if (found !== null) return found[1];
    if (/^(?:deployments?|deploy)$/.test(word)) return args[i + 1];
  }
  return undefined;
}

const selects = (selector: string, labels: Record<string, string>) =>
  selector.split(',').every((pair) => {
    const [name = '', value] = pair.split('=');
    return labels[name] === value;
  });

describe.each(PRODUCTION)('docs/operations.md, "Kubernetes", for the %s overlay', (overlay) => {
  let objects: KubeObject[];
  let namespace: string | undefined;
  beforeAll(async () => {
    objects = await render(overlay);
    namespace = find(objects, 'Deployment', 'baton-broker').metadata.namespace;
  });

  it("makes, with its `kubectl create secret` commands, every key of a Secret the overlay's pod reads", () => {
    const made = createdSecrets(kubernetesCommands);
    expect(made.length).toBeGreaterThan(0);
    for (const secret of made) expect(secret.namespace, secret.line).toBe(namespace);
    const reads = secretReads(objects);
    // Production's Redis passwords among them (components/production, the Sentinel overlay).
    expect(reads.map((read) => read.variable)).toContain('REDIS_PASSWORD');
    if (overlay === 'production-sentinel')
      expect(reads.map((read) => read.variable)).toContain('REDIS_SENTINEL_PASSWORD');
    for (const { variable, secret, key } of reads)
      expect(
        Object.keys(made.find((each) => each.name === secret)?.keys ?? {}),
        `${variable}: the key ${key} of the Secret ${secret}`,
      ).toContain(key);
  });

  it('restarts the Deployment after a Secret changes, in its namespace and by its name', () => {
    const restarts = kubernetesCommands.filter(
      ({ args }) => args[0] === 'rollout' && args[1] === 'restart',
    );
    expect(restarts.length, 'a `kubectl rollout restart`').toBeGreaterThan(0);
    for (const restart of restarts) {
      expect(restart.namespace, restart.line).toBe(namespace);
      expect(deploymentOf(restart.args), restart.line).toBe('baton-broker');
    }
    // A Secret changed in place: one the pod mounts, and a key of it the broker reads.
    const reads = secretReads(objects);
    const patches = kubernetesCommands.filter(
      ({ args }) => args[0] === 'patch' && args[1] === 'secret',
    );
    expect(patches.length, 'a `kubectl patch secret`').toBeGreaterThan(0);
    for (const patch of patches) {
      expect(patch.namespace, patch.line).toBe(namespace);
      const body = patch.args[patch.args.indexOf('-p') + 1] ?? '';
      const data = (JSON.parse(body.replace(/\$\([^)]*\)/g, 'x')) as { data: object }).data;
      for (const key of Object.keys(data))
        expect(
          reads.some((read) => read.secret === patch.args[2] && read.key === key),
          `${patch.args[2]} ${key}`,
        ).toBe(true);
    }
  });
});

describe('docs/operations.md, "Kubernetes": rotating TOKEN_ENCRYPTION_KEYS under a rolling restart', () => {
  it('makes the new key known everywhere before any broker seals with it, then drops the old one', () => {
    // The keyrings in the order the section sets them: old first (the old key still seals), new
    // first, new alone; the records re-sealed between the last two.
    const steps = ['`k1:…,k2:…`', '`k2:…,k1:…`', 'admin.js reencrypt', '`k2:…`'];
    let from = 0;
    for (const step of steps) {
      const at = kubernetesSection.indexOf(step, from);
      expect(at, `${step}, after the steps before it`).toBeGreaterThan(-1);
      from = at + step.length;
    }
    expect(kubernetesSection).toMatch(/encryption_key_missing/);
  });
});

describe('the development overlay, whose Secrets Kustomize makes', () => {
  /** The Secret each reference names, from the pod's volumes, the ServiceMonitor and the Role. */
  function references(objects: KubeObject[]) {
    const { pod } = broker(objects);
    const monitor = specOf<{
      endpoints: { authorization: { credentials: { name: string } } }[];
    }>(find(objects, 'ServiceMonitor', 'baton-broker'));
    const role = find(objects, 'Role', 'baton-metrics-reader') as KubeObject & {
      rules: { resourceNames: string[] }[];
    };
    return {
      volumes: (pod.volumes ?? []).flatMap((volume) => volume.secret?.secretName ?? []).sort(),
      monitor: monitor.endpoints.map((endpoint) => endpoint.authorization.credentials.name),
      role: role.rules.flatMap((rule) => rule.resourceNames),
    };
  }

  /** The overlay with one literal of a secretGenerator changed, as a rotation would. */
  const rotated = (secret: string, key: string) =>
    renderWith('development', [], (kustomization) => {
      const generator = kustomization.secretGenerator?.find((each) => each.name === secret);
      if (generator?.literals === undefined) throw new Error(`no generated Secret ${secret}`);
      generator.literals = generator.literals.map((literal) =>
        literal.startsWith(`${key}=`)
          ? key === 'TOKEN_ENCRYPTION_KEYS'
            ? `${key}=dev2:${Buffer.alloc(32, 2).toString('base64')},${literal.slice(key.length + 1)}`
            : `${literal}-rotated`
          : literal,
      );
    });

  it('names every Secret by its content, and every reference follows the name', async () => {
    const objects = await render('development');
    const secrets = objects
      .filter((each) => each.kind === 'Secret')
      .map((each) => each.metadata.name);
    expect(secrets.length).toBe(2);
    for (const name of secrets)
      expect(name).toMatch(/^(baton-broker-secrets|baton-metrics)-[a-z0-9]{10}$/);
    const { volumes, monitor, role } = references(objects);
    expect(volumes).toEqual([...secrets].sort());
    const metrics = secrets.find((name) => name.startsWith('baton-metrics-'));
    expect(monitor).toEqual([metrics]);
    expect(role).toEqual([metrics]);
  });

  it.each([
    ['baton-broker-secrets', 'TOKEN_ENCRYPTION_KEYS'],
    ['baton-metrics', 'METRICS_TOKEN'],
  ])('rolls the pods when %s changes (%s), and the references follow', async (secret, key) => {
    const [before, after] = await Promise.all([render('development'), rotated(secret, key)]);
    const template = (objects: KubeObject[]) =>
      specOf<{ template: unknown }>(find(objects, 'Deployment', 'baton-broker')).template;
    // A new pod template: the Deployment rolls its pods onto the new Secret.
    expect(template(after)).not.toEqual(template(before));
    const names = (objects: KubeObject[]) =>
      objects
        .filter((each) => each.kind === 'Secret')
        .map((each) => each.metadata.name)
        .sort();
    expect(references(after).volumes).toEqual(names(after));
    const metrics = names(after).find((name) => name.startsWith('baton-metrics-'));
    expect(references(after).monitor).toEqual([metrics]);
    expect(references(after).role).toEqual([metrics]);
  });
});

describe('docs/upgrading.md', () => {
  let upgrading: string;
  let commands: Kubectl[];
  beforeAll(async () => {
    upgrading = await readDoc('upgrading.md');
    commands = kubectlCommands(shellBlocks(upgrading).join('\n'));
  });

  it('never leaves the autoscaled Deployment at 0 replicas', async () => {
    for (const overlay of PRODUCTION) {
      const objects = await render(overlay);
      const { deployment } = broker(objects);
      const namespace = deployment.metadata.namespace;
      const labels = specOf<{ template: { metadata: { labels: Record<string, string> } } }>(
        deployment,
      ).template.metadata.labels;
      // No count in the manifests: an apply leaves the Deployment at whatever it was scaled to.
      expect(specOf<{ replicas?: number }>(deployment).replicas, overlay).toBeUndefined();
      const hpa = specOf<{
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
      }>(find(objects, 'HorizontalPodAutoscaler', 'baton-broker'));
      expect(hpa.scaleTargetRef).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: deployment.metadata.name,
      });

      const scales = commands.filter(({ args }) => args[0] === 'scale');
      const replicas = (command: Kubectl) =>
        Number(command.args.find((word) => word.startsWith('--replicas='))?.slice(11));
      for (const scale of scales) {
        expect(scale.namespace, scale.line).toBe(namespace);
        expect(deploymentOf(scale.args), scale.line).toBe(deployment.metadata.name);
      }
      // At 0 the autoscaler stops acting ("scaling is disabled since the replica count of the
      // target is zero"): after the new release is applied, a scale back to the autoscaler's
      // range starts it again.
      const toZero = scales.findIndex((scale) => replicas(scale) === 0);
      if (toZero >= 0 || /scal(e|es|ing) [^.]*to (0|zero)\b/i.test(upgrading)) {
        expect(toZero, 'the scale to 0, as a command').toBeGreaterThan(-1);
        const stopped = commands.indexOf(scales[toZero]!);
        const applied = commands.findIndex(
          ({ args }, index) => index > stopped && args[0] === 'apply',
        );
        expect(applied, 'an apply after the scale to 0').toBeGreaterThan(stopped);
        const back = commands.find(
          (command, index) =>
            index > applied && command.args[0] === 'scale' && replicas(command) > 0,
        );
        expect(back, 'a scale back up after the apply').toBeDefined();
        expect(replicas(back!), `${overlay}: minReplicas`).toBeGreaterThanOrEqual(hpa.minReplicas);
        expect(replicas(back!)).toBeLessThanOrEqual(hpa.maxReplicas);
      }
      // Whatever waits on the broker's pods selects them.
      for (const { args, line } of commands.filter(({ args }) => args.includes('-l')))
        expect(selects(args[args.indexOf('-l') + 1]!, labels), line).toBe(true);
    }
  });

  it('rolls a release of the same data format out with a plain apply, which the autoscaler keeps', () => {
    const applies = commands.filter(({ args }) => args[0] === 'apply');
    expect(applies.length).toBeGreaterThan(0);
    expect(upgrading).toMatch(/rolling update/);
    // And the stop before a format change is a scale the autoscaler comes back from, not a
    // Recreate strategy applied once (the next apply would roll it back).
    expect(upgrading).not.toMatch(/Recreate/);
  });
});

describe('docs/operations.md: the broker outside the image', () => {
  it('sizes the heap as the entrypoint does, wherever it runs node dist/main.js itself', () => {
    const share = Number(
      /^HEAP_SHARE=(\d+)$/m.exec(
        readFileSync(new URL('../../server/docker/entrypoint.sh', import.meta.url), 'utf8'),
      )?.[1],
    );
    expect(share).toBeGreaterThan(0);
    const lines = shellBlocks(operations)
      .join('\n')
      .split('\n')
      .filter((line) => /(^|\s)node \S*dist\/main\.js/.test(line) && !/docker|kubectl/.test(line));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const flag = /NODE_OPTIONS=--max-old-space-size=(\d+)\b/.exec(line);
      expect(flag, line).not.toBeNull();
      // The comment says of what memory: the flag is the entrypoint's share of it.
      const memory = /(\d+) (MiB|GiB)/.exec(line.slice(line.indexOf('#')));
      expect(memory, `${line}: the memory it is a share of`).not.toBeNull();
      expect(Number(flag![1]), line).toBe(oldSpaceMiB(`${memory![1]}${memory![2]!.slice(0, 2)}`));
    }
    const memorySection = section(operations, '## Memory');
    expect(memorySection).toContain(`NODE_OPTIONS=--max-old-space-size=<${share} % of`);
    expect(memorySection).toMatch(/pnpm start/);
  });
});
