import { expect } from 'vitest';
import { broker, find, specOf, type KubeObject } from '../support/kubernetes.ts';
import type { PolicySpec } from './network-policy.ts';

/** What components/admin adds to an overlay, read off the rendered objects (admin*.test.ts). */

export const ADMIN_SECRET = 'baton-admin-tokens';
export const ADMIN_KEY = 'admin-tokens.json';

export interface ServiceSpec {
  type?: string;
  selector: Record<string, string>;
  ports: { name?: string; port: number; targetPort?: string | number; nodePort?: number }[];
  externalIPs?: string[];
}

/** The broker's pod as a NetworkPolicy sees it: its namespace, its labels, its container. */
export function target(objects: KubeObject[]) {
  const { deployment, container } = broker(objects);
  const podLabels = specOf<{ template: { metadata: { labels: Record<string, string> } } }>(
    deployment,
  ).template.metadata.labels;
  return { namespace: deployment.metadata.namespace, podLabels, container };
}

/** The one label the admin policy asks of a namespace: the setting docs/operations.md names. */
export function accessLabel(objects: KubeObject[]): [string, string] {
  const { ingress = [] } = specOf<PolicySpec>(find(objects, 'NetworkPolicy', 'baton-admin'));
  const labels = ingress.flatMap((rule) =>
    (rule.from ?? []).map((peer) => Object.entries(peer.namespaceSelector?.matchLabels ?? {})),
  );
  expect(labels, 'one peer, a namespace selected by one label').toHaveLength(1);
  expect(labels[0]).toHaveLength(1);
  return labels[0]![0]!;
}

/** Every object but what the component adds, as the overlay renders it without the component. */
export function withoutAdmin(objects: KubeObject[]): KubeObject[] {
  return objects
    .filter(
      (each) =>
        !['Service', 'NetworkPolicy'].includes(each.kind) || each.metadata.name !== 'baton-admin',
    )
    .map((object) => {
      const copy = structuredClone(object) as KubeObject & { data?: Record<string, string> };
      if (copy.kind === 'ConfigMap' && copy.data) delete copy.data.ADMIN_PORT;
      if (copy.kind === 'Deployment' && copy.metadata.name === 'baton-broker') {
        const { pod, container } = broker([copy]);
        container.ports = (container.ports ?? []).filter((each) => each.name !== 'admin');
        container.env = (container.env ?? []).filter((each) => each.name !== 'ADMIN_TOKENS_FILE');
        container.volumeMounts = (container.volumeMounts ?? []).filter(
          (m) => m.name !== 'admin-tokens',
        );
        pod.volumes = (pod.volumes ?? []).filter((each) => each.name !== 'admin-tokens');
      }
      return copy;
    });
}

/** The ConfigMap generator's hashed names, which the component's ADMIN_PORT changes, made plain. */
export const unhashed = (objects: KubeObject[]): unknown =>
  JSON.parse(
    JSON.stringify(objects).replace(/baton-broker-config-[a-z0-9]{10}/g, 'baton-broker-config'),
  );
