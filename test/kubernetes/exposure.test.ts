import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  broker,
  containerEnv,
  find,
  OVERLAYS,
  portNumber,
  specOf,
  type KubeObject,
} from '../support/kubernetes.ts';
import { renderWith } from './kustomize.ts';

/**
 * The broker's public port reaches the world through an Ingress (components/ingress) or the
 * Gateway API (components/gateway-api), each ending TLS with a certificate cert-manager makes for
 * the host of PUBLIC_URL. Only the public port: the metrics listener, and the admin listener when
 * components/admin turns it on, are reached by no route. Each component is rendered on every
 * overlay, listed after the overlay's own components as docs/operations.md says, with and without
 * components/admin. The Ingress validates against the
 * Kubernetes API's schema; the Gateway API's kinds are CRDs, which kubernetes-models lacks, so
 * their shape is checked here against the fields of gateway.networking.k8s.io/v1 (the standard
 * channel, v1.2).
 */

interface ServicePort {
  name?: string;
  port: number;
  targetPort?: string | number;
}

/** The container port a Service port sends to (its targetPort, by name or number, or its port). */
const targetOf = (objects: KubeObject[], port: ServicePort): number =>
  portNumber(broker(objects).container, port.targetPort ?? port.port);

/** The Service port a route's backend names (by name or number), or a failure saying which. */
function servicePort(objects: KubeObject[], service: string, port: string | number): ServicePort {
  const { ports } = specOf<{ ports: ServicePort[] }>(find(objects, 'Service', service));
  const found = ports.find((each) => (typeof port === 'number' ? each.port : each.name) === port);
  if (found === undefined) throw new Error(`the Service ${service} has no port ${port}`);
  return found;
}

/**
 * What every route's backends must be: a port of a Service whose every port is the broker's
 * public one (PORT), never one that also serves the metrics listener or another.
 */
function expectPublicOnly(
  objects: KubeObject[],
  backends: { service: string; port: string | number }[],
) {
  const env = containerEnv(objects, broker(objects).container);
  const listeners = Object.entries(env)
    .filter(([name]) => /^[A-Z_]*PORT$/.test(name) && name !== 'PORT')
    .map(([, value]) => Number(value));
  expect(listeners).toContain(Number(env.METRICS_PORT));
  expect(backends.length).toBeGreaterThan(0);
  for (const { service, port } of backends) {
    expect(targetOf(objects, servicePort(objects, service, port)), `${service}:${port}`).toBe(
      Number(env.PORT),
    );
    // The Service as a whole: one that carries the metrics port is never a route's backend.
    const { ports } = specOf<{ ports: ServicePort[] }>(find(objects, 'Service', service));
    for (const each of ports)
      expect(listeners, `${service}: port ${each.name ?? each.port}`).not.toContain(
        targetOf(objects, each),
      );
  }
  // And the Services of the broker's pods that carry another listener (the ServiceMonitor's
  // metrics Service; baton-admin with components/admin) exist, and no route names them.
  const labels = specOf<{ template: { metadata: { labels: Record<string, string> } } }>(
    broker(objects).deployment,
  ).template.metadata.labels;
  const carrying = (listener: number) =>
    objects
      .filter((each) => each.kind === 'Service')
      .filter((each) =>
        Object.entries(specOf<{ selector: Record<string, string> }>(each).selector).every(
          ([name, value]) => labels[name] === value,
        ),
      )
      .filter((each) =>
        specOf<{ ports: ServicePort[] }>(each).ports.some(
          (port) => targetOf(objects, port) === listener,
        ),
      )
      .map((each) => each.metadata.name);
  for (const listener of listeners) {
    const services = carrying(listener);
    expect(services.length, `a Service of the port ${listener}`).toBeGreaterThan(0);
    for (const name of services) expect(backends.map((each) => each.service)).not.toContain(name);
  }
  if (env.ADMIN_PORT !== undefined)
    expect(carrying(Number(env.ADMIN_PORT))).toEqual(['baton-admin']);
}

/** Each overlay as shipped, and with the admin listener turned on (components/admin). */
const CASES = OVERLAYS.flatMap((overlay) => [
  { overlay, admin: [] as string[], label: '' },
  { overlay, admin: ['admin'], label: ' and components/admin' },
]);

/** The host of PUBLIC_URL, which the route and its certificate must name. */
const publicHost = (objects: KubeObject[]): string =>
  new URL(containerEnv(objects, broker(objects).container).PUBLIC_URL!).host;

describe.each(CASES)('the $overlay overlay with components/ingress$label', ({ overlay, admin }) => {
  let objects: KubeObject[];
  let ingress: KubeObject & {
    metadata: { annotations?: Record<string, string> };
    spec: {
      ingressClassName?: string;
      defaultBackend?: unknown;
      tls?: { hosts?: string[]; secretName?: string }[];
      rules: {
        host?: string;
        http: {
          paths: {
            path: string;
            pathType: string;
            backend: { service?: { name: string; port: { name?: string; number?: number } } };
          }[];
        };
      }[];
    };
  };
  beforeAll(async () => {
    objects = await renderWith(overlay, [...admin, 'ingress']);
    ingress = find(objects, 'Ingress', 'baton-broker') as typeof ingress;
  });

  it('adds one Ingress, valid against the Kubernetes API schema, in the overlay namespace', () => {
    expect(objects.filter((each) => each.kind === 'Ingress')).toHaveLength(1);
    expect(() =>
      new networking.Ingress(
        ingress as unknown as ConstructorParameters<typeof networking.Ingress>[0],
      ).validate(),
    ).not.toThrow();
    expect(ingress.metadata.namespace).toBe(
      find(objects, 'Deployment', 'baton-broker').metadata.namespace,
    );
  });

  it('serves the host of PUBLIC_URL, every path, over TLS with a certificate from cert-manager', () => {
    const host = publicHost(objects);
    expect(ingress.spec.rules.map((rule) => rule.host)).toEqual([host]);
    expect(ingress.spec.rules[0]!.http.paths).toMatchObject([{ path: '/', pathType: 'Prefix' }]);
    expect(ingress.spec.tls).toHaveLength(1);
    expect(ingress.spec.tls![0]!.hosts).toEqual([host]);
    expect(ingress.spec.tls![0]!.secretName).toMatch(/\S/);
    expect(ingress.metadata.annotations?.['cert-manager.io/cluster-issuer']).toMatch(/\S/);
  });

  it("routes to the Service's public port alone: never the metrics or admin port, nor their Services", () => {
    expect(ingress.spec.defaultBackend).toBeUndefined();
    const backends = ingress.spec.rules.flatMap((rule) =>
      rule.http.paths.map(({ backend }) => {
        if (backend.service === undefined) throw new Error('a backend that is not a Service');
        return {
          service: backend.service.name,
          port: backend.service.port.name ?? backend.service.port.number!,
        };
      }),
    );
    expectPublicOnly(objects, backends);
  });
});

/** Gateway API v1 (standard channel) fields, for the shape checks below. */
const HOSTNAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SECTION_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Fails, naming the path, on a field the kind does not have (the API server would refuse it). */
function onlyFields(where: string, value: unknown, fields: string[]) {
  expect(
    typeof value === 'object' && value !== null && !Array.isArray(value),
    `${where} is an object`,
  ).toBe(true);
  for (const key of Object.keys(value as object))
    expect(fields, `${where}.${key} is a field of ${where}`).toContain(key);
}

const isPort = (value: unknown) =>
  Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65535;

/** gateway.networking.k8s.io/v1 HTTPRoute: the fields of its spec this checks and reads. */
function checkHTTPRoute(route: KubeObject & { spec: unknown }) {
  const spec = route.spec as Record<string, unknown>;
  onlyFields('spec', spec, ['parentRefs', 'hostnames', 'rules']);
  const parentRefs = spec.parentRefs as Record<string, unknown>[];
  expect(Array.isArray(parentRefs) && parentRefs.length >= 1 && parentRefs.length <= 32).toBe(true);
  for (const [i, ref] of parentRefs.entries()) {
    onlyFields(`spec.parentRefs[${i}]`, ref, [
      'group',
      'kind',
      'namespace',
      'name',
      'sectionName',
      'port',
    ]);
    expect(ref.name, 'parentRefs[].name').toMatch(NAME);
    if (ref.sectionName !== undefined) expect(ref.sectionName).toMatch(SECTION_NAME);
    if (ref.port !== undefined) expect(isPort(ref.port)).toBe(true);
    if (ref.group !== undefined) expect(ref.group).toBe('gateway.networking.k8s.io');
    if (ref.kind !== undefined) expect(ref.kind).toBe('Gateway');
  }
  const hostnames = spec.hostnames as string[];
  expect(Array.isArray(hostnames) && hostnames.length >= 1 && hostnames.length <= 16).toBe(true);
  for (const hostname of hostnames) {
    expect(hostname).toMatch(HOSTNAME);
    expect(hostname.length).toBeLessThanOrEqual(253);
  }
  const rules = spec.rules as Record<string, unknown>[];
  expect(Array.isArray(rules) && rules.length >= 1 && rules.length <= 16).toBe(true);
  for (const [i, rule] of rules.entries()) {
    onlyFields(`spec.rules[${i}]`, rule, ['name', 'matches', 'filters', 'backendRefs', 'timeouts']);
    for (const [j, match] of ((rule.matches ?? []) as Record<string, unknown>[]).entries()) {
      onlyFields(`spec.rules[${i}].matches[${j}]`, match, [
        'path',
        'headers',
        'queryParams',
        'method',
      ]);
      const path = match.path as { type?: string; value?: string } | undefined;
      if (path !== undefined) {
        onlyFields(`spec.rules[${i}].matches[${j}].path`, path, ['type', 'value']);
        expect(['Exact', 'PathPrefix', 'RegularExpression']).toContain(path.type ?? 'PathPrefix');
        expect(path.value ?? '/').toMatch(/^\//);
      }
    }
    const backendRefs = rule.backendRefs as Record<string, unknown>[];
    expect(Array.isArray(backendRefs) && backendRefs.length >= 1 && backendRefs.length <= 16).toBe(
      true,
    );
    for (const [j, ref] of backendRefs.entries()) {
      onlyFields(`spec.rules[${i}].backendRefs[${j}]`, ref, [
        'group',
        'kind',
        'name',
        'namespace',
        'port',
        'weight',
        'filters',
      ]);
      expect(ref.name).toMatch(NAME);
      // A Service backend must say its port (the CRD's validation: "Must have port for Service reference").
      expect((ref.group ?? '') === '' && (ref.kind ?? 'Service') === 'Service', 'a Service').toBe(
        true,
      );
      expect(isPort(ref.port), `backendRefs[${j}].port is a port number`).toBe(true);
      if (ref.weight !== undefined) expect(Number.isInteger(ref.weight)).toBe(true);
    }
  }
}

/** gateway.networking.k8s.io/v1 Gateway: the fields of its spec this checks and reads. */
function checkGateway(gateway: KubeObject & { spec: unknown }) {
  const spec = gateway.spec as Record<string, unknown>;
  onlyFields('spec', spec, [
    'gatewayClassName',
    'listeners',
    'addresses',
    'infrastructure',
    'backendTLS',
  ]);
  expect(spec.gatewayClassName).toMatch(NAME);
  const listeners = spec.listeners as Record<string, unknown>[];
  expect(Array.isArray(listeners) && listeners.length >= 1 && listeners.length <= 64).toBe(true);
  for (const [i, listener] of listeners.entries()) {
    onlyFields(`spec.listeners[${i}]`, listener, [
      'name',
      'hostname',
      'port',
      'protocol',
      'tls',
      'allowedRoutes',
    ]);
    expect(listener.name).toMatch(SECTION_NAME);
    expect(isPort(listener.port)).toBe(true);
    expect(['HTTP', 'HTTPS', 'TLS', 'TCP', 'UDP']).toContain(listener.protocol);
    if (listener.hostname !== undefined) expect(listener.hostname).toMatch(HOSTNAME);
    const tls = listener.tls as Record<string, unknown> | undefined;
    if (tls !== undefined) {
      onlyFields(`spec.listeners[${i}].tls`, tls, ['mode', 'certificateRefs', 'options']);
      expect(['Terminate', 'Passthrough']).toContain(tls.mode ?? 'Terminate');
      for (const [j, ref] of ((tls.certificateRefs ?? []) as Record<string, unknown>[]).entries()) {
        onlyFields(`spec.listeners[${i}].tls.certificateRefs[${j}]`, ref, [
          'group',
          'kind',
          'name',
          'namespace',
        ]);
        expect(ref.name).toMatch(NAME);
      }
    }
  }
}

describe.each(CASES)(
  'the $overlay overlay with components/gateway-api$label',
  ({ overlay, admin }) => {
    let objects: KubeObject[];
    let route: KubeObject & {
      spec: {
        parentRefs: { name: string; namespace?: string; sectionName?: string }[];
        hostnames: string[];
        rules: { backendRefs: { name: string; port: number }[] }[];
      };
    };
    let gateway: KubeObject & {
      metadata: { annotations?: Record<string, string> };
      spec: {
        listeners: {
          name: string;
          hostname?: string;
          port: number;
          protocol: string;
          tls?: { mode?: string; certificateRefs?: { kind?: string; name: string }[] };
          allowedRoutes?: { namespaces?: { from?: string } };
        }[];
      };
    };
    beforeAll(async () => {
      objects = await renderWith(overlay, [...admin, 'gateway-api']);
      route = find(objects, 'HTTPRoute', 'baton-broker') as typeof route;
      gateway = find(objects, 'Gateway', 'baton-broker') as typeof gateway;
    });

    it('adds an HTTPRoute and its Gateway, of gateway.networking.k8s.io/v1, in the overlay namespace', () => {
      expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1');
      expect(gateway.apiVersion).toBe('gateway.networking.k8s.io/v1');
      checkHTTPRoute(route);
      checkGateway(gateway);
      const namespace = find(objects, 'Deployment', 'baton-broker').metadata.namespace;
      expect(route.metadata.namespace).toBe(namespace);
      expect(gateway.metadata.namespace).toBe(namespace);
    });

    it("attaches to the Gateway's HTTPS listener for the host of PUBLIC_URL, whose certificate cert-manager makes", () => {
      const host = publicHost(objects);
      expect(route.spec.hostnames).toEqual([host]);
      expect(route.spec.parentRefs).toHaveLength(1);
      const [parent] = route.spec.parentRefs;
      expect(parent!.name).toBe(gateway.metadata.name);
      expect(parent!.namespace ?? gateway.metadata.namespace).toBe(gateway.metadata.namespace);
      const listener = gateway.spec.listeners.find((each) => each.name === parent!.sectionName);
      expect(listener, `the listener ${parent!.sectionName}`).toBeDefined();
      expect(listener).toMatchObject({ protocol: 'HTTPS', port: 443, hostname: host });
      expect(listener!.tls?.mode ?? 'Terminate').toBe('Terminate');
      expect(listener!.tls?.certificateRefs).toHaveLength(1);
      expect(listener!.tls!.certificateRefs![0]!.kind ?? 'Secret').toBe('Secret');
      expect(listener!.allowedRoutes?.namespaces?.from).toBe('Same');
      // cert-manager's Gateway support makes the listener's Secret for its hostname.
      expect(gateway.metadata.annotations?.['cert-manager.io/cluster-issuer']).toMatch(/\S/);
      // No listener in plain HTTP serves the broker (PUBLIC_URL is https).
      expect(gateway.spec.listeners.filter((each) => each.protocol !== 'HTTPS')).toEqual([]);
    });

    it("routes to the Service's public port alone: never the metrics or admin port, nor their Services", () => {
      expectPublicOnly(
        objects,
        route.spec.rules.flatMap((rule) =>
          rule.backendRefs.map((ref) => ({ service: ref.name, port: ref.port })),
        ),
      );
    });
  },
);
