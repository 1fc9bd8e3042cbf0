import { BlockList, isIPv6 } from 'node:net';
import { portNumber, specOf, type Container, type KubeObject } from '../support/kubernetes.ts';

/**
 * Whether the NetworkPolicies of a rendered overlay let a connection into a pod, read as the API
 * documents them (networking.k8s.io/v1): policies add up; a pod no Ingress policy selects takes
 * anything; a rule admits when one of its ports and one of its peers match (no ports: every port;
 * no peers: every source); a peer's namespaceSelector and podSelector must both match, a
 * podSelector alone means the policy's own namespace, and an ipBlock is its CIDR less its excepts.
 * What only a network plugin shows (the policies enforced at all) is not checked here.
 */

export interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface Peer {
  ipBlock?: { cidr: string; except?: string[] };
  namespaceSelector?: Selector;
  podSelector?: Selector;
}
export interface IngressRule {
  from?: Peer[];
  ports?: { port?: number | string; endPort?: number; protocol?: string }[];
}
export interface PolicySpec {
  podSelector: Selector;
  policyTypes?: string[];
  ingress?: IngressRule[];
  egress?: unknown[];
}

/** Who connects: a pod of a namespace (with their labels), or an address outside the cluster. */
export type Source =
  | {
      namespace: string;
      namespaceLabels?: Record<string, string>;
      podLabels?: Record<string, string>;
      address?: string;
    }
  | { address: string };

/** A label selector against some labels (an empty selector selects everything). */
export function selects(selector: Selector, labels: Record<string, string>): boolean {
  const pairs = Object.entries(selector.matchLabels ?? {});
  return (
    pairs.every(([name, value]) => labels[name] === value) &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      const value = labels[key];
      if (operator === 'In') return value !== undefined && values.includes(value);
      if (operator === 'NotIn') return value === undefined || !values.includes(value);
      if (operator === 'Exists') return value !== undefined;
      if (operator === 'DoesNotExist') return value === undefined;
      throw new Error(`a selector operator this reading does not know: ${operator}`);
    })
  );
}

/** Whether `address` lies within `cidr` (either family). */
export const contains = (cidr: string, address: string): boolean => {
  const [network = '', prefix] = cidr.split('/');
  const family = isIPv6(network) ? 'ipv6' : 'ipv4';
  if (family !== (isIPv6(address) ? 'ipv6' : 'ipv4')) return false;
  const list = new BlockList();
  list.addSubnet(network, Number(prefix), family);
  return list.check(address, family);
};

/** Whether a rule's ports take TCP to this container port (a named port read off the container). */
export function opensPort(rule: IngressRule, port: number, container: Container): boolean {
  if (rule.ports === undefined || rule.ports.length === 0) return true;
  return rule.ports.some((each) => {
    if ((each.protocol ?? 'TCP') !== 'TCP') return false;
    if (each.port === undefined) return true;
    if (typeof each.port === 'string')
      return (
        container.ports?.some((p) => p.name === each.port && p.containerPort === port) ?? false
      );
    return each.port === port || (each.port <= port && port <= (each.endPort ?? each.port));
  });
}

/** Whether a peer of a rule, in a policy of this namespace, matches the source. */
function peerMatches(peer: Peer, source: Source, policyNamespace: string | undefined): boolean {
  if (peer.ipBlock !== undefined)
    return (
      source.address !== undefined &&
      contains(peer.ipBlock.cidr, source.address) &&
      !(peer.ipBlock.except ?? []).some((range) => contains(range, source.address!))
    );
  if (!('namespace' in source)) return false;
  // Every namespace carries its name as a label (Kubernetes 1.21 and later).
  const namespaceLabels = {
    ...source.namespaceLabels,
    'kubernetes.io/metadata.name': source.namespace,
  };
  const inNamespace =
    peer.namespaceSelector === undefined
      ? source.namespace === policyNamespace
      : selects(peer.namespaceSelector, namespaceLabels);
  return inNamespace && selects(peer.podSelector ?? {}, source.podLabels ?? {});
}

/** The NetworkPolicies that isolate the target pod for ingress. */
export function ingressPolicies(
  objects: KubeObject[],
  namespace: string | undefined,
  podLabels: Record<string, string>,
): KubeObject[] {
  return objects.filter((object) => {
    if (object.kind !== 'NetworkPolicy' || object.metadata.namespace !== namespace) return false;
    const spec = specOf<PolicySpec>(object);
    const types = spec.policyTypes ?? ['Ingress', ...(spec.egress ? ['Egress'] : [])];
    return types.includes('Ingress') && selects(spec.podSelector, podLabels);
  });
}

/** Whether the policies let the source connect to this TCP port of the target pod. */
export function admitted(
  objects: KubeObject[],
  target: {
    namespace: string | undefined;
    podLabels: Record<string, string>;
    container: Container;
  },
  source: Source,
  port: number | string,
): boolean {
  const number = portNumber(target.container, port);
  const policies = ingressPolicies(objects, target.namespace, target.podLabels);
  if (policies.length === 0) return true;
  return policies.some((policy) =>
    (specOf<PolicySpec>(policy).ingress ?? []).some(
      (rule) =>
        opensPort(rule, number, target.container) &&
        (rule.from === undefined ||
          rule.from.length === 0 ||
          rule.from.some((peer) => peerMatches(peer, source, target.namespace))),
    ),
  );
}
