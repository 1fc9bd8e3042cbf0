import { beforeAll, describe, expect, it } from 'vitest';
import { find, specOf, type KubeObject } from '../support/kubernetes.ts';
import { accessLabel, ADMIN_KEY, ADMIN_SECRET, target, type ServiceSpec } from './admin-objects.ts';
import { createdSecrets, kubectlCommands, readDoc, section, shellBlocks } from './documented.ts';
import { renderWith } from './kustomize.ts';

/**
 * docs/operations.md, "The admin listener on Kubernetes", against what a production overlay with
 * components/admin renders: the commands it gives make the Secret the pod mounts, label a namespace
 * as the NetworkPolicy asks, and forward a port of the Service that carries the admin listener.
 */

describe('docs/operations.md, "The admin listener on Kubernetes"', () => {
  let text: string;
  let objects: KubeObject[];
  beforeAll(async () => {
    text = section(await readDoc('operations.md'), '### The admin listener on Kubernetes');
    objects = await renderWith('production-sentinel', ['admin']);
  });
  const commands = () => kubectlCommands(shellBlocks(text).join('\n'));

  it('turns it on with components/admin, with tokens the CLI makes', () => {
    expect(text).toContain('components/admin');
    expect(text).toMatch(/node dist\/admin\.js token \S+ (viewer|operator)/);
  });

  it(`makes the Secret ${ADMIN_SECRET} with the one key the pod mounts, in the broker's namespace`, () => {
    const made = createdSecrets(commands()).filter((each) => each.name === ADMIN_SECRET);
    expect(made.length).toBeGreaterThan(0);
    for (const secret of made) {
      expect(secret.namespace, secret.line).toBe(target(objects).namespace);
      expect(Object.keys(secret.keys), secret.line).toEqual([ADMIN_KEY]);
    }
  });

  it("labels a namespace with the admin policy's label", () => {
    const [label, value] = accessLabel(objects);
    const labels = commands().filter(
      ({ args }) => args[0] === 'label' && /^(ns|namespaces?)$/.test(args[1] ?? ''),
    );
    expect(labels.length).toBeGreaterThan(0);
    for (const { args, line } of labels) expect(args.slice(3), line).toEqual([`${label}=${value}`]);
    // The one place to change it is named.
    expect(text).toContain('components/admin/networkpolicy.yaml');
  });

  it('forwards an operator’s port to the Service baton-admin, in its namespace', () => {
    const forwards = commands().filter(({ args }) => args[0] === 'port-forward');
    expect(forwards.length).toBeGreaterThan(0);
    const { ports } = specOf<ServiceSpec>(find(objects, 'Service', 'baton-admin'));
    for (const { args, namespace, line } of forwards) {
      expect(namespace, line).toBe(target(objects).namespace);
      expect(args[1], line).toBe('svc/baton-admin');
      const remote = Number(args[2]?.split(':').at(-1));
      expect(
        ports.map((each) => each.port),
        line,
      ).toContain(remote);
    }
  });

  it('restarts the brokers after the tokens change (they are read at start-up)', () => {
    const restarts = commands().filter(
      ({ args }) => args[0] === 'rollout' && args[1] === 'restart',
    );
    expect(restarts.length).toBeGreaterThan(0);
    for (const { args, namespace, line } of restarts) {
      expect(namespace, line).toBe(target(objects).namespace);
      expect(args[2], line).toBe('deployment/baton-broker');
    }
  });
});
