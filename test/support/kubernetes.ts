import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';

/**
 * deploy/kubernetes/ as a cluster would receive it: each overlay rendered by `kubectl kustomize`
 * (Kustomize inside kubectl, as an operator runs it), parsed into plain objects.
 */
export const KUBERNETES_DIR = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));

/** Every overlay under deploy/kubernetes/overlays/, so that a new one is checked too. */
export const OVERLAYS: readonly string[] = readdirSync(`${KUBERNETES_DIR}overlays`, {
  withFileTypes: true,
})
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

/** Mebibytes of a Kubernetes memory quantity (Mi, Gi, M). */
export const mebibytes = (quantity: string): number => {
  const found = /^(\d+)(Mi|Gi|M)$/.exec(quantity);
  if (found === null) throw new Error(`unexpected memory quantity ${quantity}`);
  const units: Record<string, number> = { Mi: 1, Gi: 1024, M: 1e6 / 2 ** 20 };
  return Number(found[1]) * units[found[2]!]!;
};

/** The old space (MiB) the image's entrypoint gives V8 under a memory limit: HEAP_SHARE % of it. */
export function oldSpaceMiB(limit: string): number {
  const entrypoint = readFileSync(
    new URL('../../server/docker/entrypoint.sh', import.meta.url),
    'utf8',
  );
  const share = Number(/^HEAP_SHARE=(\d+)$/m.exec(entrypoint)?.[1]);
  if (!Number.isInteger(share)) throw new Error('entrypoint.sh: no HEAP_SHARE');
  return Math.floor((mebibytes(limit) * share) / 100);
}

/** The broker's memory limit in the base Deployment (deploy/kubernetes/base/deployment.yaml). */
export function deploymentMemoryLimit(): string {
  const deployment = parse(readFileSync(`${KUBERNETES_DIR}base/deployment.yaml`, 'utf8')) as {
    spec: { template: { spec: { containers: Container[] } } };
  };
  const limit = deployment.spec.template.spec.containers[0]?.resources?.limits?.memory;
  if (limit === undefined) throw new Error('deployment.yaml: no memory limit');
  return limit;
}

/** A rendered object; its spec is read through specOf, once the schemas have validated it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  data?: Record<string, string>;
}

/** The spec of an object the schema tests have validated, as the shape the caller reads. */
export function specOf<T>(object: KubeObject): T {
  return object.spec as T;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: {
    requests?: Record<string, string>;
    limits?: Record<string, string>;
  };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

export interface PodSpec {
  containers: Container[];
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    fsGroup?: number;
    seccompProfile?: { type: string };
  };
  volumes?: {
    name: string;
    secret?: { secretName: string; defaultMode?: number };
    emptyDir?: { medium?: string; sizeLimit?: string };
  }[];
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string }[];
}

/** `kubectl kustomize` of one overlay, every document as an object. */
export async function render(overlay: string): Promise<KubeObject[]> {
  const { stdout } = await promisify(execFile)(
    'kubectl',
    ['kustomize', `${KUBERNETES_DIR}overlays/${overlay}`],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return parseAllDocuments(stdout).map((document) => {
    if (document.errors.length > 0) throw new Error(document.errors.join('\n'));
    return document.toJS() as KubeObject;
  });
}

export function find(objects: KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((each) => each.kind === kind && each.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

/** The broker's Deployment, its pod and its one container. */
export function broker(objects: KubeObject[]): {
  deployment: KubeObject;
  pod: PodSpec;
  container: Container;
} {
  const deployment = find(objects, 'Deployment', 'baton-broker');
  const pod = specOf<{ template: { spec: PodSpec } }>(deployment).template.spec;
  const container = pod.containers.find((each) => each.name === 'broker');
  if (container === undefined) throw new Error('the broker Deployment has no `broker` container');
  return { deployment, pod, container };
}

/**
 * The environment the container starts with: its ConfigMaps (envFrom) and then its own `env`
 * values, as the kubelet applies them. A value from a Secret by reference is refused: secrets come
 * as files.
 */
export function containerEnv(objects: KubeObject[], container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef === undefined)
      throw new Error(`envFrom other than a ConfigMap: ${JSON.stringify(source)}`);
    Object.assign(env, find(objects, 'ConfigMap', source.configMapRef.name).data);
  }
  for (const { name, value, valueFrom } of container.env ?? []) {
    if (valueFrom !== undefined || value === undefined)
      throw new Error(`${name} is not a plain value (valueFrom): secrets must be files`);
    env[name] = value;
  }
  return env;
}

/** The container port a probe or a Service names (by name or number). */
export function portNumber(container: Container, port: string | number): number {
  if (typeof port === 'number') return port;
  const found = container.ports?.find((each) => each.name === port);
  if (found === undefined) throw new Error(`the container has no port named ${port}`);
  return found.containerPort;
}
